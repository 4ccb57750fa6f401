#include "lib/analysis/rule_util.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <iterator>

#include "lib/analysis/api_names.h"

namespace sightline::analysis {

std::string DeviceLabel(const TimelineModel& model, uint32_t device) {
  if (device >= model.devices.size()) return "device ?";
  const DeviceTimelineInfo& d = model.devices[device];
  std::string label = "device " + std::to_string(d.device_id);
  if (model.traces.size() > 1) {
    label += " (rank " + std::to_string(model.traces[d.trace].rank) + ")";
  }
  return label;
}

std::string ApiName(const TimelineModel& model, uint32_t name) {
  return std::string(StripApiVersionSuffix(model.String(name)));
}

std::string FormatNs(double ns) {
  char buf[64];
  double a = ns < 0 ? -ns : ns;
  if (a >= 1e9) {
    std::snprintf(buf, sizeof(buf), "%.2f s", ns / 1e9);
  } else if (a >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.2f ms", ns / 1e6);
  } else if (a >= 1e3) {
    std::snprintf(buf, sizeof(buf), "%.1f us", ns / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f ns", ns);
  }
  return buf;
}

std::string FormatPct(double pct) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", pct);
  return buf;
}

std::string StackText(const TimelineModel& model, uint16_t trace, uint32_t stack_id,
                      size_t max_frames) {
  const CallStack* stack = model.Stack(trace, stack_id);
  if (stack == nullptr) return "";
  std::string out;
  size_t n = std::min(max_frames, stack->frames.size());
  for (size_t i = 0; i < n; ++i) {
    const StackFrame& f = stack->frames[i];
    if (i > 0) out += " <- ";
    std::string_view fn = model.String(f.function_id);
    std::string_view mod = model.String(f.module_id);
    if (!fn.empty()) {
      out += fn;
    } else {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "0x%" PRIx64, f.address);
      out += buf;
    }
    if (!mod.empty()) {
      size_t slash = mod.rfind('/');
      char buf[32];
      std::snprintf(buf, sizeof(buf), "+0x%" PRIx64, f.offset);
      out += " (";
      out += slash == std::string_view::npos ? mod : mod.substr(slash + 1);
      out += buf;
      out += ")";
    }
  }
  return out;
}

std::string FormatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t u = 0;
  double v = bytes < 0 ? -bytes : bytes;
  while (v >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  char buf[48];
  if (u == 0) {
    std::snprintf(buf, sizeof(buf), "%s%.0f B", bytes < 0 ? "-" : "", v);
  } else {
    std::snprintf(buf, sizeof(buf), v < 10 ? "%s%.2f %s" : "%s%.1f %s", bytes < 0 ? "-" : "", v,
                  units[u]);
  }
  return buf;
}

Offender MemorySiteOffender(const std::string& site) {
  Offender o;
  o.name = site;
  size_t colon = site.find(".py:");
  if (colon != std::string::npos && site.find(" in ", colon) != std::string::npos) {
    size_t slash = site.rfind('/', colon);
    size_t begin = slash == std::string::npos ? 0 : slash + 1;
    o.name = site.substr(begin, site.find(" in ", colon) - begin);  // "train.py:42"
    o.python_site = site;
  }
  return o;
}

const DeviceSummary* FindDeviceSummary(const Report& report, uint32_t device) {
  for (const DeviceSummary& d : report.summary.devices) {
    if (d.index == device) return &d;
  }
  return nullptr;
}

double PctOf(double part, double whole) { return whole <= 0 ? 0.0 : 100.0 * part / whole; }

void KeepTopOffenders(std::vector<Offender>* offenders, size_t n) {
  std::stable_sort(offenders->begin(), offenders->end(), [](const Offender& a, const Offender& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    if (a.count != b.count) return a.count > b.count;
    return a.name < b.name;
  });
  if (offenders->size() > n) offenders->resize(n);
}

}  // namespace sightline::analysis
