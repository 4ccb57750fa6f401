// lib/trace/memory_tracker.h — bytes in use on one device from its memory
// events (MemoryEvent), replayed in time order. One accounting for every
// consumer: the analyzer's memory view (lib/analysis/memory.h) and the
// memory counter tracks of the Chrome and Perfetto exports.
//
//  * An allocation adds its bytes; the release of the same address takes them
//    away. A release of an address allocated before recording began (capture
//    windows, attach) changes nothing and is reported as unmatched.
//  * Stream-ordered allocations (cudaMallocAsync) come from a pool: the
//    device holds the pool's reserved size as the records report it
//    (pool_size), not the sum of its allocations; without a size, the sum of
//    the pool's live allocations. Pool trims and destructions set that size.
//  * Device memory = dynamic allocations (device, arrays, unknown kinds) +
//    pools + module statics; pinned host and managed memory are kept apart.
// Header-only, std only (usable on the writer side too).
#ifndef SIGHTLINE_LIB_TRACE_MEMORY_TRACKER_H_
#define SIGHTLINE_LIB_TRACE_MEMORY_TRACKER_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>

#include "lib/trace/events.h"

namespace sightline::trace {

class MemoryTracker {
 public:
  enum Category : uint8_t { kDynamic = 0, kStatic = 1, kPinned = 2, kManaged = 3, kCategories = 4 };

  static Category CategoryOf(MemoryKind k) {
    switch (k) {
      case MemoryKind::kDeviceStatic: return kStatic;
      case MemoryKind::kPinned:
      case MemoryKind::kPageable: return kPinned;
      case MemoryKind::kManaged:
      case MemoryKind::kManagedStatic: return kManaged;
      default: return kDynamic;  // device, array, unknown
    }
  }

  struct Live {
    uint64_t bytes = 0;
    uint64_t pool = 0;   // pool base address, 0 = not stream ordered
    uint32_t tag = 0;    // the caller's (e.g. the allocation's event index)
    Category category = kDynamic;
  };

  // Applies one event; returns false for a release whose allocation was not
  // seen (unmatched).
  bool Apply(const MemoryEvent& e, uint32_t tag = 0) {
    switch (e.operation) {
      case MemoryOperation::kAllocation: {
        Live l;
        l.bytes = e.bytes;
        l.pool = e.pool_address;
        l.tag = tag;
        l.category = CategoryOf(e.memory_kind);
        auto [it, inserted] = live_.try_emplace(e.address, l);
        if (!inserted) {  // the address came back without a recorded release
          Remove(it->second);
          it->second = l;
        }
        Add(l);
        if (l.pool != 0) SetPoolSize(l.pool, e.pool_size);
        return true;
      }
      case MemoryOperation::kRelease: {
        auto it = live_.find(e.address);
        bool matched = it != live_.end();
        if (matched) {
          Remove(it->second);
          live_.erase(it);
        }
        if (e.pool_address != 0) SetPoolSize(e.pool_address, e.pool_size);
        return matched;
      }
      case MemoryOperation::kPoolCreated:
      case MemoryOperation::kPoolTrimmed:
        SetPoolSize(e.address, e.bytes);
        return true;
      case MemoryOperation::kPoolDestroyed: {
        auto it = pools_.find(e.address);
        if (it != pools_.end()) {
          pool_bytes_ -= Footprint(it->second);
          pools_.erase(it);
        }
        return true;
      }
      case MemoryOperation::kUnknown:
        break;
    }
    return true;
  }

  uint64_t device_bytes() const {
    return by_category_[kDynamic] + by_category_[kStatic] + pool_bytes_;
  }
  uint64_t static_bytes() const { return by_category_[kStatic]; }
  uint64_t pool_bytes() const { return pool_bytes_; }
  uint64_t pinned_bytes() const { return by_category_[kPinned]; }
  uint64_t managed_bytes() const { return by_category_[kManaged]; }
  const std::unordered_map<uint64_t, Live>& live() const { return live_; }

  struct Pool {
    uint64_t size = 0;      // reserved size reported by the records (0 unknown)
    uint64_t live_sum = 0;  // bytes of its live allocations
  };
  // What a pool holds on the device: its reported size, else its live bytes.
  static uint64_t Footprint(const Pool& p) { return p.size > 0 ? p.size : p.live_sum; }
  // Stream-ordered pools by base address (destroyed ones removed).
  const std::map<uint64_t, Pool>& pools() const { return pools_; }

 private:

  void Add(const Live& l) {
    if (l.pool != 0) {
      Pool& p = pools_[l.pool];
      pool_bytes_ -= Footprint(p);
      p.live_sum += l.bytes;
      pool_bytes_ += Footprint(p);
    } else {
      by_category_[l.category] += l.bytes;
    }
  }
  void Remove(const Live& l) {
    if (l.pool != 0) {
      Pool& p = pools_[l.pool];
      pool_bytes_ -= Footprint(p);
      p.live_sum -= std::min(p.live_sum, l.bytes);
      pool_bytes_ += Footprint(p);
    } else {
      by_category_[l.category] -= std::min(by_category_[l.category], l.bytes);
    }
  }
  void SetPoolSize(uint64_t pool, uint64_t size) {
    if (size == 0) return;
    Pool& p = pools_[pool];
    pool_bytes_ -= Footprint(p);
    p.size = size;
    pool_bytes_ += Footprint(p);
  }

  std::unordered_map<uint64_t, Live> live_;
  std::map<uint64_t, Pool> pools_;
  uint64_t by_category_[kCategories] = {};
  uint64_t pool_bytes_ = 0;
};

}  // namespace sightline::trace

#endif  // SIGHTLINE_LIB_TRACE_MEMORY_TRACKER_H_
