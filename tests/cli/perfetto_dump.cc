// sightline_perfetto_dump FILE — decodes a `sightline export --format
// perfetto` file with the classes generated from our Perfetto subset schema
// (lib/export/perfetto/perfetto_trace_subset.proto) and prints a one-line
// JSON summary the CLI tests compare with the trace's counts:
//   {"packets":N,"tracks":N,"slices":{"kernel":N,...},"instants":N,
//    "counters":N,"flow_starts":N,"flow_ends":N,"undefined_iids":N,
//    "unbalanced_tracks":N,"thread_tracks":N,"process_tracks":N}
// Exit 1 when the file does not parse as a Trace.
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "perfetto/perfetto_trace_subset.pb.h"

namespace pp = ::sightline::perfetto_subset;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: sightline_perfetto_dump FILE\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  pp::Trace trace;
  if (!in || !trace.ParseFromString(ss.str())) {
    std::fprintf(stderr, "sightline_perfetto_dump: %s does not parse as a Trace\n", argv[1]);
    return 1;
  }
  std::set<uint64_t> names, cats, tracks;
  std::map<std::string, long> slices;
  std::map<uint64_t, long> open;
  long instants = 0, counters = 0, flow_starts = 0, flow_ends = 0, undefined = 0;
  long threads = 0, processes = 0;
  std::map<uint64_t, std::string> cat_names;
  for (const pp::TracePacket& p : trace.packet()) {
    if (p.has_interned_data()) {
      for (const auto& n : p.interned_data().event_names()) names.insert(n.iid());
      for (const auto& c : p.interned_data().event_categories()) {
        cats.insert(c.iid());
        cat_names[c.iid()] = c.name();
      }
    }
    if (p.has_track_descriptor()) {
      tracks.insert(p.track_descriptor().uuid());
      threads += p.track_descriptor().has_thread();
      processes += p.track_descriptor().has_process();
    }
    if (!p.has_track_event()) continue;
    const pp::TrackEvent& e = p.track_event();
    if (!tracks.count(e.track_uuid())) ++undefined;
    for (uint64_t c : e.category_iids()) {
      if (!cats.count(c)) ++undefined;
    }
    if (e.has_name_iid() && !names.count(e.name_iid())) ++undefined;
    switch (e.type()) {
      case pp::TrackEvent::TYPE_SLICE_BEGIN:
        ++slices[e.category_iids_size() ? cat_names[e.category_iids(0)] : "?"];
        ++open[e.track_uuid()];
        flow_starts += e.flow_ids_size();
        flow_ends += e.terminating_flow_ids_size();
        break;
      case pp::TrackEvent::TYPE_SLICE_END:
        --open[e.track_uuid()];
        break;
      case pp::TrackEvent::TYPE_INSTANT:
        ++instants;
        break;
      case pp::TrackEvent::TYPE_COUNTER:
        ++counters;
        break;
      default:
        break;
    }
  }
  long unbalanced = 0;
  for (const auto& [t, n] : open) unbalanced += n != 0;
  std::printf("{\"packets\":%d,\"tracks\":%zu,\"slices\":{", trace.packet_size(), tracks.size());
  bool first = true;
  for (const auto& [cat, n] : slices) {
    std::printf("%s\"%s\":%ld", first ? "" : ",", cat.c_str(), n);
    first = false;
  }
  std::printf("},\"instants\":%ld,\"counters\":%ld,\"flow_starts\":%ld,\"flow_ends\":%ld,"
              "\"undefined_iids\":%ld,\"unbalanced_tracks\":%ld,\"thread_tracks\":%ld,"
              "\"process_tracks\":%ld}\n",
              instants, counters, flow_starts, flow_ends, undefined, unbalanced, threads, processes);
  return 0;
}
