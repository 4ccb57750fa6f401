// CRC-32C: SSE4.2 hardware path with a slicing-by-8 fallback.
#include "lib/trace/crc32c.h"

#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace sightline::trace {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // reflected Castagnoli

struct Tables {
  uint32_t t[8][256];
};

constexpr Tables MakeTables() {
  Tables tables{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kPolynomial : 0);
    tables.t[0][i] = crc;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (int k = 1; k < 8; ++k) {
      tables.t[k][i] = (tables.t[k - 1][i] >> 8) ^ tables.t[0][tables.t[k - 1][i] & 0xff];
    }
  }
  return tables;
}

constexpr Tables kTables = MakeTables();

uint32_t ExtendPortableRaw(uint32_t crc, const uint8_t* p, size_t n) {
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;
    crc = kTables.t[7][lo & 0xff] ^ kTables.t[6][(lo >> 8) & 0xff] ^
          kTables.t[5][(lo >> 16) & 0xff] ^ kTables.t[4][lo >> 24] ^
          kTables.t[3][hi & 0xff] ^ kTables.t[2][(hi >> 8) & 0xff] ^
          kTables.t[1][(hi >> 16) & 0xff] ^ kTables.t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ kTables.t[0][(crc ^ *p++) & 0xff];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t ExtendHardwareRaw(uint32_t crc, const uint8_t* p,
                                                              size_t n) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

bool DetectHardware() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}
#else
bool DetectHardware() { return false; }
#endif

const bool kHaveHardware = DetectHardware();

}  // namespace

namespace internal {
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t size) {
  return ~ExtendPortableRaw(~crc, static_cast<const uint8_t*>(data), size);
}
bool Crc32cHardwareAvailable() { return kHaveHardware; }
}  // namespace internal

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  if (kHaveHardware) return ~ExtendHardwareRaw(~crc, p, size);
#endif
  return ~ExtendPortableRaw(~crc, p, size);
}

uint32_t Crc32c(const void* data, size_t size) { return Crc32cExtend(0, data, size); }

}  // namespace sightline::trace
