// lib/trace/input_file.h — the one way a consumer command opens an input file.
//
// Every input path (trace reader, `diff`'s JSON-report sniffing and reader,
// the CLI's input checks) opens through OpenInputFile, which never blocks and
// never reads from anything but a regular file:
//   open(O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)   (a FIFO with no writer
//                                                        returns at once)
//   fstat → refuse directories and every non-regular file ("FILE: not a
//           regular file (fifo)") before a single byte is read
//   clear O_NONBLOCK                                    (ordinary reads after)
// Checking the type with stat() before open() would leave a window where the
// name is swapped for a FIFO; checking the opened descriptor has none.
#ifndef SIGHTLINE_LIB_TRACE_INPUT_FILE_H_
#define SIGHTLINE_LIB_TRACE_INPUT_FILE_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace sightline::trace {

struct InputFile {
  int fd = -1;        // owned by the caller (close it)
  uint64_t size = 0;  // st_size at open
};

// Opens `path` for reading (rules above). Errors name the path: NotFound,
// PermissionDenied, or InvalidArgument ("is a directory, not a trace file",
// "not a regular file (fifo)", ...).
absl::StatusOr<InputFile> OpenInputFile(const std::string& path);

// "fifo", "socket", "character device", "block device", "directory",
// "symbolic link", "regular file" or "unknown type" for a st_mode.
const char* FileTypeName(mode_t mode);

// Reads up to `max_bytes` of `path` (opened as above) into a string; errors
// as above plus read errors. For small inputs (JSON reports, sniffing).
absl::StatusOr<std::string> ReadInputPrefix(const std::string& path, size_t max_bytes);

}  // namespace sightline::trace

#endif  // SIGHTLINE_LIB_TRACE_INPUT_FILE_H_
