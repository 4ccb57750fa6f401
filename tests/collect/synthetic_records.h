// tests/collect/synthetic_records.h — builders for CUPTI 13 activity records,
// as CUPTI lays them out in a buffer (STYLE.md #9), and a packed buffer with a
// fake cuptiActivityGetNextRecord over it.
#ifndef SIGHTLINE_TESTS_COLLECT_SYNTHETIC_RECORDS_H_
#define SIGHTLINE_TESTS_COLLECT_SYNTHETIC_RECORDS_H_

#include <cupti_activity.h>

#include <cstring>
#include <vector>

namespace sightline::collect::testing {

// A 1 KiB device memset on stream 7 of context 1.
inline CUpti_ActivityMemset4 Memset(uint64_t start, uint64_t end, uint32_t correlation) {
  CUpti_ActivityMemset4 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.start = start;
  m.end = end;
  m.bytes = 1024;
  m.contextId = 1;
  m.streamId = 7;
  m.correlationId = correlation;
  return m;
}

inline CUpti_ActivityKernel10 Kernel(uint64_t start, uint64_t end, const char* name,
                                     uint32_t correlation) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = 7;
  k.gridX = 132; k.gridY = 2; k.gridZ = 1;
  k.blockX = 256; k.blockY = 1; k.blockZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 4096;
  k.dynamicSharedMemory = 1024;
  k.sharedMemoryExecuted = 102400;
  k.correlationId = correlation;
  k.name = name;
  return k;
}

inline CUpti_ActivityMemcpy6 Memcpy(uint64_t start, uint64_t end, uint8_t copy_kind,
                                    uint8_t src, uint8_t dst, bool async, uint64_t bytes) {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = copy_kind;
  m.srcKind = src;
  m.dstKind = dst;
  m.flags = async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
  m.bytes = bytes;
  m.start = start;
  m.end = end;
  m.contextId = 1;
  m.streamId = 7;
  m.correlationId = 11;
  return m;
}

inline CUpti_ActivityAPI Api(CUpti_ActivityKind kind, uint32_t cbid, uint64_t start,
                             uint64_t end, uint32_t correlation) {
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof(a));
  a.kind = kind;
  a.cbid = cbid;
  a.start = start;
  a.end = end;
  a.processId = 100;
  a.threadId = 101;
  a.correlationId = correlation;
  return a;
}

inline CUpti_ActivityMarker2 Marker(CUpti_ActivityFlag flags, uint32_t id, uint64_t ts,
                                    const char* name, const char* domain, uint32_t thread) {
  CUpti_ActivityMarker2 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = flags;
  m.timestamp = ts;
  m.id = id;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = 100;
  m.objectId.pt.threadId = thread;
  m.name = name;
  m.domain = domain;
  return m;
}

// Records packed one after another, 8-byte aligned, like a CUPTI buffer.
class PackedBuffer {
 public:
  template <typename Record>
  void Append(const Record& r) {
    size_t offset = bytes_.size();
    bytes_.resize(offset + ((sizeof(Record) + 7) & ~size_t{7}) + sizeof(uint64_t));
    uint64_t size = sizeof(Record);
    std::memcpy(bytes_.data() + offset, &size, sizeof(size));
    std::memcpy(bytes_.data() + offset + sizeof(size), &r, sizeof(Record));
  }
  uint8_t* data() { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }

  // cuptiActivityGetNextRecord over this layout: [u64 size][record]...
  static CUptiResult Next(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
    size_t offset = 0;
    if (*record != nullptr) {
      uint8_t* prev = reinterpret_cast<uint8_t*>(*record);
      uint64_t size = 0;
      std::memcpy(&size, prev - sizeof(uint64_t), sizeof(size));
      offset = static_cast<size_t>(prev - buffer) + ((size + 7) & ~uint64_t{7});
    }
    if (offset >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    if (offset + sizeof(uint64_t) > valid) return CUPTI_ERROR_INVALID_PARAMETER;
    uint64_t size = 0;
    std::memcpy(&size, buffer + offset, sizeof(size));
    if (size == 0 || offset + sizeof(uint64_t) + size > valid) return CUPTI_ERROR_INVALID_PARAMETER;
    *record = reinterpret_cast<CUpti_Activity*>(buffer + offset + sizeof(uint64_t));
    return CUPTI_SUCCESS;
  }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace sightline::collect::testing

#endif  // SIGHTLINE_TESTS_COLLECT_SYNTHETIC_RECORDS_H_
