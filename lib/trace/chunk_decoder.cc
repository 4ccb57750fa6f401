// Hand-written protobuf decoding of TraceHeader, Chunk and Footer payloads.
#include "lib/trace/chunk_decoder.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "lib/trace/event_encoder.h"
#include "lib/trace/proto_wire.h"

namespace sightline::trace::internal {
namespace {

using wire::WireReader;
using wire::WireType;

// Caps on repeated fields whose decoded form is much larger than their
// smallest encoding (a 2-byte empty DeviceInfo becomes a ~300-byte struct):
// far above anything a real collector writes, they keep memory proportional
// to the input by a small factor even for hostile frames of 64 MiB.
constexpr size_t kMaxDevices = 4096;
constexpr size_t kMaxCommandLineArgs = 1 << 16;
constexpr size_t kMaxEnabledEntries = 1024;
constexpr size_t kMaxMetricValues = 1 << 16;
constexpr size_t kMaxStackFrames = 4096;
constexpr size_t kMaxCallStacks = 1 << 20;

inline uint32_t U32(uint64_t v) { return static_cast<uint32_t>(v); }
inline int32_t S32(uint64_t v) { return wire::UnZigZag32(static_cast<uint32_t>(v)); }
inline double F64(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}
template <typename Enum>
inline Enum E8(uint64_t v) {
  return static_cast<Enum>(static_cast<uint8_t>(v));
}

struct NoBytes {
  bool operator()(uint32_t, std::string_view) const { return true; }
};
struct NoFixed {
  void operator()(uint32_t, uint64_t) const {}
};

// Walks the fields of one message. `on_varint(field, v)` and
// `on_fixed64(field, bits)` see scalar fields; `on_bytes(field, view)` sees
// length-delimited ones and may reject them (returns false). Fixed32 and
// groups are skipped. Returns false on malformed input.
template <typename OnVarint, typename OnFixed64 = NoFixed, typename OnBytes = NoBytes>
bool ForEachField(WireReader r, OnVarint on_varint, OnFixed64 on_fixed64 = {},
                  OnBytes on_bytes = {}) {
  while (!r.done()) {
    uint32_t field;
    WireType type;
    if (!r.ReadTag(&field, &type)) return false;
    if (type == wire::kVarint) {
      uint64_t v;
      if (!r.ReadVarint(&v)) return false;
      on_varint(field, v);
    } else if (type == wire::kFixed64) {
      uint64_t v;
      if (!r.ReadFixed64(&v)) return false;
      on_fixed64(field, v);
    } else if (type == wire::kLengthDelimited) {
      std::string_view bytes;
      if (!r.ReadBytes(&bytes) || !on_bytes(field, bytes)) return false;
    } else if (!r.Skip(field, type)) {
      return false;
    }
  }
  return true;
}

bool DecodeLoss(std::string_view bytes, LossReport* e) {
  return ForEachField(WireReader(bytes), [e](uint32_t f, uint64_t v) {
    switch (f) {
      case 1: e->cupti_dropped_records = v; break;
      case 2: e->queue_dropped_buffers = v; break;
      case 3: e->queue_dropped_records = v; break;
      case 4: e->invalid_timestamps = v; break;
      case 5: e->metric_ranges_dropped = v; break;
      case 6: e->unsupported_records = v; break;
      case 7: e->write_errors = v; break;
      case 8: e->stacks_dropped = v; break;
      case 9: e->gpu_metric_samples_dropped = v; break;
      case 10: e->untraced_kernels_lost = v; break;
    }
  });
}

bool DecodeDevice(std::string_view bytes, DeviceInfo* d) {
  return ForEachField(
      WireReader(bytes),
      [d](uint32_t f, uint64_t v) {
        switch (f) {
          case 1: d->id = U32(v); break;
          case 4: d->cc_major = U32(v); break;
          case 5: d->cc_minor = U32(v); break;
          case 6: d->sm_count = U32(v); break;
          case 7: d->max_warps_per_sm = U32(v); break;
          case 8: d->max_blocks_per_sm = U32(v); break;
          case 9: d->max_threads_per_block = U32(v); break;
          case 10: d->registers_per_sm = U32(v); break;
          case 11: d->registers_per_block = U32(v); break;
          case 12: d->shared_memory_per_sm = v; break;
          case 13: d->shared_memory_per_block = v; break;
          case 14: d->shared_memory_per_block_optin = v; break;
          case 15: d->reserved_shared_memory_per_block = v; break;
          case 16: d->warp_size = U32(v); break;
          case 17: d->core_clock_khz = U32(v); break;
          case 18: d->memory_clock_khz = U32(v); break;
          case 19: d->memory_bus_width_bits = U32(v); break;
          case 20: d->global_memory_bytes = v; break;
          case 21: d->l2_cache_bytes = v; break;
          case 24: d->pci_bus_id = U32(v); break;
          case 25: d->async_engine_count = U32(v); break;
        }
      },
      [d](uint32_t f, uint64_t bits) {
        if (f == 22) d->memory_bandwidth_gbps = F64(bits);
      },
      [d](uint32_t f, std::string_view s) {
        if (f == 2) d->name.assign(s);
        if (f == 3) d->uuid.assign(s);
        if (f == 23) d->chip_name.assign(s);
        return true;
      });
}

}  // namespace

bool DecodeHeader(std::string_view payload, TraceHeaderData* h, DecodeError* error) {
  *h = TraceHeaderData();
  // proto3 default of DeviceInfo.warp_size is 0, while the struct defaults to
  // 32; a device message always starts from the proto default.
  bool ok = ForEachField(
      WireReader(payload),
      [h](uint32_t f, uint64_t v) {
        switch (f) {
          case 1: h->format_version = U32(v); break;
          case 5: h->cupti_api_version = U32(v); break;
          case 6: h->cuda_driver_version = U32(v); break;
          case 7: h->cuda_runtime_version = U32(v); break;
          case 9: h->start_realtime_ns = v; break;
        }
      },
      NoFixed(),
      [h](uint32_t f, std::string_view s) {
        switch (f) {
          case 2: h->tool_version.assign(s); return true;
          case 3: {
            ProcessInfo& p = h->process;
            // Fields absent on the wire hold the proto defaults (0).
            p.rank = 0;
            p.local_rank = 0;
            return ForEachField(
                WireReader(s),
                [&p](uint32_t pf, uint64_t v) {
                  if (pf == 1) p.pid = U32(v);
                  if (pf == 4) p.rank = S32(v);
                  if (pf == 5) p.world_size = S32(v);
                  if (pf == 6) p.local_rank = S32(v);
                },
                NoFixed(),
                [&p](uint32_t pf, std::string_view ps) {
                  if (pf == 2) p.host.assign(ps);
                  if (pf == 3) {
                    if (p.command_line.size() >= kMaxCommandLineArgs) return false;
                    p.command_line.emplace_back(ps);
                  }
                  return true;
                });
          }
          case 4: {
            DeviceInfo device;
            device.warp_size = 0;
            if (!DecodeDevice(s, &device)) return false;
            if (h->devices.size() >= kMaxDevices) return false;
            h->devices.push_back(std::move(device));
            return true;
          }
          case 8:
            return ForEachField(WireReader(s), [h](uint32_t cf, uint64_t v) {
              if (cf == 1) h->clock.trace_ns = v;
              if (cf == 2) h->clock.realtime_ns = v;
            });
          case 10:
            if (h->enabled.size() >= kMaxEnabledEntries) return false;
            h->enabled.emplace_back(s);
            return true;
          case 11: h->metric_set.assign(s); return true;
          case 12: h->capture_range.assign(s); return true;
        }
        return true;
      });
  if (!ok) *error = {0, "malformed TraceHeader"};
  return ok;
}

bool DecodeFooter(std::string_view payload, FooterData* footer, DecodeError* error) {
  *footer = FooterData();
  bool ok = ForEachField(
      WireReader(payload),
      [footer](uint32_t f, uint64_t v) {
        switch (f) {
          case 1: footer->chunks = v; break;
          case 2: footer->events = v; break;
          case 5: footer->first_ns = v; break;
          case 6: footer->last_ns = v; break;
          case 7: footer->end_realtime_ns = v; break;
        }
      },
      NoFixed(),
      [footer](uint32_t f, std::string_view s) {
        if (f == 3) {
          uint64_t kind = 0, count = 0;
          if (!ForEachField(WireReader(s), [&](uint32_t cf, uint64_t v) {
                if (cf == 1) kind = v;
                if (cf == 2) count = v;
              })) {
            return false;
          }
          if (kind < static_cast<uint64_t>(kNumEventKinds)) footer->counts[kind] += count;
          return true;
        }
        if (f == 4) return DecodeLoss(s, &footer->losses);
        if (f == 8) footer->end_reason.assign(s);
        return true;
      });
  if (!ok) *error = {0, "malformed Footer"};
  return ok;
}

bool ChunkDecoder::DecodePayload(uint32_t field, std::string_view bytes, bool reset) {
  WireReader r(bytes);
  switch (field) {
    case kKernelField: {
      KernelEvent& e = kernel_;
      if (reset) e = KernelEvent();
      return ForEachField(r, [&e](uint32_t f, uint64_t v) {
        switch (f) {
          case 1: e.device_id = U32(v); break;
          case 2: e.context_id = U32(v); break;
          case 3: e.stream_id = U32(v); break;
          case 4: e.correlation_id = U32(v); break;
          case 5: e.name_id = U32(v); break;
          case 6: e.grid_x = U32(v); break;
          case 7: e.grid_y = U32(v); break;
          case 8: e.grid_z = U32(v); break;
          case 9: e.block_x = U32(v); break;
          case 10: e.block_y = U32(v); break;
          case 11: e.block_z = U32(v); break;
          case 12: e.registers_per_thread = U32(v); break;
          case 13: e.static_shared_bytes = U32(v); break;
          case 14: e.dynamic_shared_bytes = U32(v); break;
          case 15: e.local_bytes_per_thread = U32(v); break;
          case 16: e.shared_memory_config_bytes = U32(v); break;
          case 17: e.graph_id = v; break;
          case 18: e.graph_node_id = v; break;
          case 19: e.launch_type = U32(v); break;
          case 20: e.cluster_x = U32(v); break;
          case 21: e.cluster_y = U32(v); break;
          case 22: e.cluster_z = U32(v); break;
          case 23: e.replayed = v != 0; break;
          case 24: e.cache_config_requested = U32(v); break;
          case 25: e.cache_config_executed = U32(v); break;
          case 26: e.untraced = v != 0; break;
        }
      });
    }
    case kMemcpyField: {
      MemcpyEvent& e = memcpy_;
      if (reset) e = MemcpyEvent();
      return ForEachField(r, [&e](uint32_t f, uint64_t v) {
        switch (f) {
          case 1: e.device_id = U32(v); break;
          case 2: e.context_id = U32(v); break;
          case 3: e.stream_id = U32(v); break;
          case 4: e.correlation_id = U32(v); break;
          case 5: e.bytes = v; break;
          case 6: e.copy_kind = E8<CopyKind>(v); break;
          case 7: e.src_kind = E8<MemoryKind>(v); break;
          case 8: e.dst_kind = E8<MemoryKind>(v); break;
          case 9: e.async = v != 0; break;
          case 10: e.src_device_id = U32(v); break;
          case 11: e.dst_device_id = U32(v); break;
          case 12: e.graph_node_id = v; break;
        }
      });
    }
    case kMemsetField: {
      MemsetEvent& e = memset_;
      if (reset) e = MemsetEvent();
      return ForEachField(r, [&e](uint32_t f, uint64_t v) {
        switch (f) {
          case 1: e.device_id = U32(v); break;
          case 2: e.context_id = U32(v); break;
          case 3: e.stream_id = U32(v); break;
          case 4: e.correlation_id = U32(v); break;
          case 5: e.bytes = v; break;
          case 6: e.value = U32(v); break;
          case 7: e.memory_kind = E8<MemoryKind>(v); break;
          case 8: e.async = v != 0; break;
          case 9: e.graph_node_id = v; break;
          case 10: e.untraced = v != 0; break;
        }
      });
    }
    case kMemoryField: {
      MemoryEvent& e = memory_;
      if (reset) {
        e = MemoryEvent();
        e.stream_id = 0;  // proto default; the writer sends kNoStream explicitly
      }
      return ForEachField(r, [&e](uint32_t f, uint64_t v) {
        switch (f) {
          case 1: e.device_id = U32(v); break;
          case 2: e.context_id = U32(v); break;
          case 3: e.stream_id = U32(v); break;
          case 4: e.correlation_id = U32(v); break;
          case 5: e.operation = E8<MemoryOperation>(v); break;
          case 6: e.memory_kind = E8<MemoryKind>(v); break;
          case 7: e.address = v; break;
          case 8: e.bytes = v; break;
          case 9: e.async = v != 0; break;
          case 10: e.pool_address = v; break;
          case 11: e.pool_type = U32(v); break;
          case 12: e.pool_size = v; break;
          case 13: e.pool_used = v; break;
          case 14: e.pool_release_threshold = v; break;
          case 15: e.source_id = U32(v); break;
          case 16: e.pc = v; break;
        }
      });
    }
    case kSyncField: {
      SyncEvent& e = sync_;
      if (reset) {
        e = SyncEvent();
        e.stream_id = 0;  // proto default; the writer sends kNoStream explicitly
      }
      return ForEachField(r, [&e](uint32_t f, uint64_t v) {
        switch (f) {
          case 1: e.context_id = U32(v); break;
          case 2: e.stream_id = U32(v); break;
          case 3: e.correlation_id = U32(v); break;
          case 4: e.sync_kind = E8<SyncKind>(v); break;
          case 5: e.cuda_event_id = v; break;
          case 6: e.device_id = U32(v); break;
        }
      });
    }
    case kApiField: {
      ApiEvent& e = api_;
      if (reset) e = ApiEvent();
      return ForEachField(r, [&e](uint32_t f, uint64_t v) {
        switch (f) {
          case 1: e.domain = E8<ApiDomain>(v); break;
          case 2: e.cbid = U32(v); break;
          case 3: e.name_id = U32(v); break;
          case 4: e.correlation_id = U32(v); break;
          case 5: e.thread_id = U32(v); break;
          case 6: e.return_value = U32(v); break;
          case 7: e.stack_id = U32(v); break;
          case 8: e.python_stack_id = U32(v); break;
        }
      });
    }
    case kNvtxRangeField: {
      NvtxRangeEvent& e = nvtx_range_;
      if (reset) e = NvtxRangeEvent();
      return ForEachField(
          r,
          [&e](uint32_t f, uint64_t v) {
            switch (f) {
              case 1: e.domain_id = U32(v); break;
              case 2: e.name_id = U32(v); break;
              case 3: e.thread_id = U32(v); break;
              case 4: e.end_thread_id = U32(v); break;
              case 5: e.color = U32(v); break;
              case 6: e.category = U32(v); break;
              case 7: e.payload_kind = E8<PayloadKind>(v); break;
              case 8: e.payload_int = wire::UnZigZag64(v); break;
              case 10: e.push_pop = v != 0; break;
            }
          },
          [&e](uint32_t f, uint64_t bits) {
            if (f == 9) e.payload_double = F64(bits);
          });
    }
    case kNvtxMarkerField: {
      NvtxMarkerEvent& e = nvtx_marker_;
      if (reset) e = NvtxMarkerEvent();
      return ForEachField(
          r,
          [&e](uint32_t f, uint64_t v) {
            switch (f) {
              case 1: e.domain_id = U32(v); break;
              case 2: e.name_id = U32(v); break;
              case 3: e.thread_id = U32(v); break;
              case 4: e.color = U32(v); break;
              case 5: e.category = U32(v); break;
              case 6: e.payload_kind = E8<PayloadKind>(v); break;
              case 7: e.payload_int = wire::UnZigZag64(v); break;
            }
          },
          [&e](uint32_t f, uint64_t bits) {
            if (f == 8) e.payload_double = F64(bits);
          });
    }
    case kNcclField: {
      NcclEvent& e = nccl_;
      if (reset) {
        e = NcclEvent();
        e.rank = 0;  // proto default
        e.peer = -1;  // optional: absent = unknown
      }
      return ForEachField(r, [&e](uint32_t f, uint64_t v) {
        switch (f) {
          case 1: e.device_id = U32(v); break;
          case 2: e.stream_id = U32(v); break;
          case 3: e.correlation_id = U32(v); break;
          case 4: e.op = E8<NcclOp>(v); break;
          case 5: e.bytes = v; break;
          case 6: e.count = v; break;
          case 7: e.datatype_id = U32(v); break;
          case 8: e.comm_id = v; break;
          case 9: e.rank = S32(v); break;
          case 10: e.nranks = S32(v); break;
          case 11: e.name_id = U32(v); break;
          case 12: e.source = static_cast<NcclSource>(U32(v)); break;
          case 13: e.thread_id = U32(v); break;
          case 14: e.peer = S32(v); break;
        }
      });
    }
    case kMetricRangeField: {
      MetricRangeEvent& e = metric_range_;
      if (reset) {
        std::vector<MetricValue> values = std::move(e.values);  // keeps capacity
        values.clear();
        e = MetricRangeEvent();
        e.values = std::move(values);
      }
      return ForEachField(
          r,
          [&e](uint32_t f, uint64_t v) {
            switch (f) {
              case 1: e.device_id = U32(v); break;
              case 2: e.correlation_id = U32(v); break;
              case 3: e.range_name_id = U32(v); break;
              case 5: e.num_passes = U32(v); break;
              case 6: e.range_index = U32(v); break;
              case 7: e.launches_spanned = U32(v); break;
              case 8: e.first_correlation_id = U32(v); break;
              case 9: e.passes_collected = U32(v); break;
              case 10: e.user_range = v == 1; break;
            }
          },
          NoFixed(),
          [&e](uint32_t f, std::string_view s) {
            if (f != 4) return true;
            MetricValue value;
            if (!ForEachField(
                    WireReader(s),
                    [&value](uint32_t vf, uint64_t v) {
                      if (vf == 1) value.name_id = U32(v);
                    },
                    [&value](uint32_t vf, uint64_t bits) {
                      if (vf == 2) value.value = F64(bits);
                    })) {
              return false;
            }
            if (e.values.size() >= kMaxMetricValues) return false;
            e.values.push_back(value);
            return true;
          });
    }
    case kGpuMetricsField: {
      GpuMetricSamplesEvent& e = gpu_metrics_;
      if (reset) {
        e.device_id = 0;
        e.interval_ns = 0;
        e.metric_name_ids.clear();  // the vectors keep their capacity
        e.sample_start_ns.clear();
        e.sample_end_ns.clear();
        e.values.clear();
        gpu_durations_.clear();
      }
      // Packed repeated fields (what the writer emits); an unpacked varint
      // element is accepted too, as protobuf parsers do.
      auto push_varint = [&e, this](uint32_t f, uint64_t v) {
        switch (f) {
          case 2:
            if (e.metric_name_ids.size() >= kMaxGpuMetrics) return false;
            e.metric_name_ids.push_back(U32(v));
            return true;
          case 3:
            if (e.sample_start_ns.size() >= kMaxGpuMetricSamples) return false;
            e.sample_start_ns.push_back(v);
            return true;
          case 4:
            if (gpu_durations_.size() >= kMaxGpuMetricSamples) return false;
            gpu_durations_.push_back(v);
            return true;
          default:
            return true;  // a field this reader does not know: skipped
        }
      };
      bool ok = true;
      bool decoded = ForEachField(
          r,
          [&](uint32_t f, uint64_t v) {
            if (f == 1) e.device_id = U32(v);
            else if (f == 6) e.interval_ns = U32(v);
            else if (!push_varint(f, v)) ok = false;
          },
          NoFixed(),
          [&](uint32_t f, std::string_view s) {
            if (f >= 2 && f <= 4) {
              WireReader packed(s);
              while (!packed.done()) {
                uint64_t v;
                if (!packed.ReadVarint(&v) || !push_varint(f, v)) return false;
              }
            } else if (f == 5) {
              if (s.size() % 4 != 0 ||
                  e.values.size() + s.size() / 4 > kMaxGpuMetricSamples * kMaxGpuMetrics) {
                return false;
              }
              if (s.empty()) return true;  // memcpy's pointers must not be null, even for 0 bytes
              const size_t old = e.values.size();
              e.values.resize(old + s.size() / 4);
              std::memcpy(e.values.data() + old, s.data(), s.size());
            }
            return true;
          });
      return decoded && ok;  // arrays that disagree: an invalid event (Dispatch)
    }
    case kCaptureWindowField: {
      CaptureWindowEvent& e = capture_window_;
      if (reset) e = CaptureWindowEvent();
      return ForEachField(r, [&e](uint32_t f, uint64_t v) {
        if (f == 1) e.index = U32(v);
        if (f == 2) e.label_id = U32(v);
        if (f == 3) e.trigger = E8<CaptureTrigger>(v);
      });
    }
    case kOverheadField: {
      OverheadEvent& e = overhead_;
      if (reset) e = OverheadEvent();
      return ForEachField(r, [&e](uint32_t f, uint64_t v) {
        if (f == 1) e.overhead_kind = U32(v);
        if (f == 2) e.thread_id = U32(v);
        if (f == 3) e.device_id = U32(v);
      });
    }
    case kStepField: {
      StepEvent& e = step_;
      if (reset) e = StepEvent();
      return ForEachField(r, [&e](uint32_t f, uint64_t v) {
        if (f == 1) e.step = v;
        if (f == 2) e.thread_id = U32(v);
        if (f == 3) e.name_id = U32(v);
      });
    }
    case kLossField:
      if (reset) loss_ = LossReport();
      return DecodeLoss(bytes, &loss_);
  }
  return true;  // a payload kind this reader does not know: skipped
}

void ChunkDecoder::Dispatch(uint32_t field, uint64_t start, uint64_t duration,
                            EventVisitor& visitor, ChunkStats* stats) {
  uint64_t end = start + duration;
  EventKind kind = static_cast<EventKind>(field - kKernelField + 1);
  bool ranged = true;
  switch (field) {
    case kKernelField: kernel_.start_ns = start; kernel_.end_ns = end; visitor.OnKernel(kernel_); break;
    case kMemcpyField: memcpy_.start_ns = start; memcpy_.end_ns = end; visitor.OnMemcpy(memcpy_); break;
    case kMemsetField: memset_.start_ns = start; memset_.end_ns = end; visitor.OnMemset(memset_); break;
    case kSyncField: sync_.start_ns = start; sync_.end_ns = end; visitor.OnSync(sync_); break;
    case kApiField: api_.start_ns = start; api_.end_ns = end; visitor.OnApi(api_); break;
    case kNvtxRangeField:
      nvtx_range_.start_ns = start;
      nvtx_range_.end_ns = end;
      visitor.OnNvtxRange(nvtx_range_);
      break;
    case kNvtxMarkerField:
      ranged = false;
      nvtx_marker_.timestamp_ns = start;
      visitor.OnNvtxMarker(nvtx_marker_);
      break;
    case kNcclField: nccl_.start_ns = start; nccl_.end_ns = end; visitor.OnNccl(nccl_); break;
    case kMetricRangeField:
      metric_range_.start_ns = start;
      metric_range_.end_ns = end;
      visitor.OnMetricRange(metric_range_);
      break;
    case kGpuMetricsField:
      gpu_metrics_.start_ns = start;
      gpu_metrics_.end_ns = end;
      // The arrays must agree (a duration per sample, a value per sample and
      // metric), else the event is counted invalid and not visited.
      if (gpu_durations_.size() != gpu_metrics_.sample_start_ns.size() ||
          gpu_metrics_.values.size() !=
              gpu_metrics_.sample_start_ns.size() * gpu_metrics_.metric_name_ids.size()) {
        ++stats->invalid_events;
        ++stats->events;
        ++stats->counts[static_cast<int>(EventKind::kGpuMetrics)];
        return;
      }
      gpu_metrics_.sample_end_ns.resize(gpu_metrics_.sample_start_ns.size());
      for (size_t i = 0; i < gpu_metrics_.sample_start_ns.size(); ++i) {
        gpu_metrics_.sample_start_ns[i] += start;  // offsets → times (mod 2^64, as written)
        gpu_metrics_.sample_end_ns[i] = gpu_metrics_.sample_start_ns[i] + gpu_durations_[i];
      }
      visitor.OnGpuMetrics(gpu_metrics_);
      break;
    case kCaptureWindowField:
      capture_window_.start_ns = start;
      capture_window_.end_ns = end;
      visitor.OnCaptureWindow(capture_window_);
      break;
    case kOverheadField:
      overhead_.start_ns = start;
      overhead_.end_ns = end;
      visitor.OnOverhead(overhead_);
      break;
    case kStepField:
      ranged = false;
      step_.timestamp_ns = start;
      visitor.OnStep(step_);
      break;
    case kMemoryField:
      ranged = false;
      memory_.timestamp_ns = start;
      visitor.OnMemory(memory_);
      break;
    case kLossField:
      ranged = false;
      loss_.timestamp_ns = start;
      stats->has_last_loss = true;
      stats->last_loss = loss_;
      visitor.OnLoss(loss_);
      break;
    default:
      return;
  }
  ++stats->events;
  ++stats->counts[static_cast<size_t>(kind)];
  // Durations are written modulo 2^64, so `end` is exactly what the writer
  // had, including an invalid end < start.
  if (ranged && end < start) ++stats->invalid_events;
  if (start != 0) {
    stats->first_ns = std::min(stats->first_ns, start);
    stats->last_ns = std::max(stats->last_ns, ranged ? std::max(start, end) : start);
  }
}

bool ChunkDecoder::Decode(std::string_view payload, StringTable* strings,
                          std::unordered_map<uint32_t, CallStack>* stacks, EventVisitor& visitor,
                          ChunkStats* stats, DecodeError* error) {
  const uint8_t* begin = reinterpret_cast<const uint8_t*>(payload.data());
  // Pass 1: sequence, base time, string and stack definitions (which must be
  // known before the events that use them, wherever they sit in the chunk);
  // also checks the top-level structure before any event is visited.
  uint64_t base_time = 0;
  size_t field_start = 0;
  bool ok = ForEachField(
      WireReader(payload),
      [&](uint32_t f, uint64_t v) {
        if (f == 1) stats->sequence = v;
        if (f == 2) base_time = v;
      },
      NoFixed(),
      [&](uint32_t f, std::string_view s) {
        field_start = static_cast<size_t>(reinterpret_cast<const uint8_t*>(s.data()) - begin);
        if (f == 3) {
          uint32_t id = 0;
          std::string_view value;
          if (!ForEachField(
                  WireReader(s), [&id](uint32_t sf, uint64_t v) { if (sf == 1) id = U32(v); },
                  NoFixed(), [&value](uint32_t sf, std::string_view sv) {
                    if (sf == 2) value = sv;
                    return true;
                  })) {
            *error = {field_start, "malformed string definition"};
            return false;
          }
          if (id == 0) return true;  // id 0 is the empty string by definition
          if (strings->Has(id)) {
            if (strings->Get(id) != value) ++stats->string_conflicts;  // first wins
            return true;
          }
          strings->Set(id, std::string(value));
        } else if (f == 4) {
          CallStack stack;
          if (!ForEachField(
                  WireReader(s), [&stack](uint32_t sf, uint64_t v) {
                    if (sf == 1) stack.id = U32(v);
                    if (sf == 3) stack.kind = v == 1 ? StackKind::kPython : StackKind::kNative;
                  },
                  NoFixed(), [&stack](uint32_t sf, std::string_view frame_bytes) {
                    if (sf != 2) return true;
                    StackFrame frame;
                    if (!ForEachField(WireReader(frame_bytes), [&frame](uint32_t ff, uint64_t v) {
                          if (ff == 1) frame.function_id = U32(v);
                          if (ff == 2) frame.module_id = U32(v);
                          if (ff == 3) frame.offset = v;
                          if (ff == 4) frame.address = v;
                          if (ff == 5) frame.line = U32(v);
                        })) {
                      return false;
                    }
                    if (stack.frames.size() >= kMaxStackFrames) return false;
                    stack.frames.push_back(frame);
                    return true;
                  })) {
            *error = {field_start, "malformed call stack definition"};
            return false;
          }
          if (stack.id == 0) return true;
          if (stacks->size() >= kMaxCallStacks && stacks->count(stack.id) == 0) {
            ++stats->stacks_over_limit;
            return true;
          }
          stacks->emplace(stack.id, std::move(stack));
        }
        return true;
      });
  if (!ok) {
    if (error->what[0] == '\0') *error = {0, "malformed chunk"};
    return false;
  }

  // Pass 2: events, in order, each visited as soon as it is decoded.
  uint64_t previous_start = base_time;
  WireReader chunk(payload);
  while (!chunk.done()) {
    uint32_t f;
    WireType type;
    size_t event_offset = chunk.offset();
    if (!chunk.ReadTag(&f, &type)) {
      *error = {event_offset, "malformed chunk"};
      return false;
    }
    if (f != 5 || type != wire::kLengthDelimited) {
      if (!chunk.Skip(f, type)) {
        *error = {event_offset, "malformed chunk"};
        return false;
      }
      continue;
    }
    WireReader event(payload.substr(0, 0));
    if (!chunk.ReadSubReader(&event)) {
      *error = {event_offset, "malformed event"};
      return false;
    }
    uint64_t delta_zz = 0, duration = 0;
    uint32_t payload_field = 0;
    while (!event.done()) {
      uint32_t ef;
      WireType et;
      if (!event.ReadTag(&ef, &et)) {
        *error = {event_offset, "malformed event"};
        return false;
      }
      if (et == wire::kVarint && (ef == 1 || ef == 2)) {
        uint64_t v;
        if (!event.ReadVarint(&v)) {
          *error = {event_offset, "malformed event"};
          return false;
        }
        (ef == 1 ? delta_zz : duration) = v;
      } else if (et == wire::kLengthDelimited && ef >= kKernelField && ef <= kLastPayloadField) {
        std::string_view bytes;
        if (!event.ReadBytes(&bytes) || !DecodePayload(ef, bytes, ef != payload_field)) {
          *error = {event_offset, "malformed event payload"};
          return false;
        }
        payload_field = ef;
      } else if (!event.Skip(ef, et)) {
        *error = {event_offset, "malformed event"};
        return false;
      }
    }
    uint64_t start = previous_start + static_cast<uint64_t>(wire::UnZigZag64(delta_zz));
    previous_start = start;
    if (payload_field != 0) Dispatch(payload_field, start, duration, visitor, stats);
  }
  return true;
}

}  // namespace sightline::trace::internal
