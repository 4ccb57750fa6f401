/* sightline/sightline.h — the C ABI of libsightline_inject.so for programs
 * that link sightline in (or want to annotate without NVTX).
 *
 * Link with -lsightline_inject (or dlopen it). The same library is what
 * `sightline profile` injects; when both happen in one process there is one
 * collector, shared.
 *
 *   sightline_start()  opens a capture window. When the program is only linked
 *                      (no CUDA_INJECTION64_PATH, no SIGHTLINE_CAPTURE), the
 *                      capture mode is "api": nothing is recorded until
 *                      sightline_start(). Under `sightline profile
 *                      --capture-range api` likewise. In other modes it only
 *                      initialises the collector. Returns 0 on success.
 *   sightline_stop()   closes the window opened by sightline_start().
 *   sightline_flush()  hands all completed records to the trace file now
 *                      (blocks up to 10 s). Not from a CUDA callback.
 *   sightline_range_push(name) / sightline_range_pop()
 *                      a per-thread nested range, recorded as an NVTX-style
 *                      range in domain "sightline". While no window is open
 *                      each costs one load and a branch. `name` must stay
 *                      valid until the matching pop (string literals do).
 *   sightline_step(n)  marks the start of training step n (StepEvent).
 *   sightline_version() "0.1.0"
 *   sightline_last_error() the last problem seen ("" if none); valid until
 *                      the next sightline call on any thread.
 * Output and options come from SIGHTLINE_* environment variables (see
 * `sightline profile --help`). Every function is safe to call from any thread
 * and never aborts or throws.
 */
#ifndef SIGHTLINE_SIGHTLINE_H_
#define SIGHTLINE_SIGHTLINE_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIGHTLINE_API __attribute__((visibility("default")))

SIGHTLINE_API int sightline_start(void);
SIGHTLINE_API int sightline_stop(void);
SIGHTLINE_API int sightline_flush(void);
SIGHTLINE_API void sightline_range_push(const char* name);
SIGHTLINE_API void sightline_range_pop(void);
SIGHTLINE_API void sightline_step(uint64_t step);
SIGHTLINE_API const char* sightline_version(void);
SIGHTLINE_API const char* sightline_last_error(void);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* SIGHTLINE_SIGHTLINE_H_ */
