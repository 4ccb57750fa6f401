// lib/trace/crc32c.h — CRC-32C (Castagnoli), as used by the frame format.
//
// Polynomial 0x1EDC6F41 (reflected 0x82F63B78), initial value and final xor
// 0xFFFFFFFF: Crc32c("123456789") == 0xE3069283. Uses the SSE4.2 `crc32`
// instruction when the CPU has it (checked once at run time) and a
// slicing-by-8 table otherwise. libc only; safe inside the injected library.
#ifndef SIGHTLINE_LIB_TRACE_CRC32C_H_
#define SIGHTLINE_LIB_TRACE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace sightline::trace {

// CRC of `size` bytes at `data`.
uint32_t Crc32c(const void* data, size_t size);

// Continues a CRC: Crc32cExtend(Crc32c(a), b) == Crc32c(a + b).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

namespace internal {
// The portable table implementation, exposed so tests can check that both
// paths agree.
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t size);
// True when the hardware path is in use.
bool Crc32cHardwareAvailable();
}  // namespace internal

}  // namespace sightline::trace

#endif  // SIGHTLINE_LIB_TRACE_CRC32C_H_
