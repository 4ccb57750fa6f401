// lib/trace/json_writer.h — a small streaming JSON writer with no
// dependencies (no abseil, no JSON library), shared by `sightline info` and
// the exporters.
//
// Output is always valid JSON text (RFC 8259):
//  * strings: `"` and `\` escaped; control characters as \n, \t, ... or
//    \u00XX; valid UTF-8 passes through unchanged; each byte of an invalid
//    UTF-8 sequence becomes U+FFFD, so arbitrary kernel names cannot break
//    the document;
//  * numbers: integers exact; doubles in the shortest form that reads back
//    to the same value; NaN and ±infinity (not representable in JSON) are
//    written as null;
//  * commas and (optionally) indentation are managed by the writer.
//
// Streaming: the text accumulates in a std::string; FlushTo() moves what is
// there to a FILE*, so exporting a large trace needs bounded memory.
//
//   std::string out;
//   sightline::json::JsonWriter w(&out, /*indent=*/2);
//   w.BeginObject().Key("schema").String("sightline.info.v1")
//    .Key("counts").BeginObject().Key("kernel").Uint(12).EndObject()
//    .EndObject();
#ifndef SIGHTLINE_LIB_TRACE_JSON_WRITER_H_
#define SIGHTLINE_LIB_TRACE_JSON_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace sightline::json {

class JsonWriter {
 public:
  // `indent` = 0: compact, one line. > 0: that many spaces per level.
  explicit JsonWriter(std::string* out, int indent = 0) : out_(out), indent_(indent) {}

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  // An object member's name; the next call writes its value.
  JsonWriter& Key(std::string_view key);

  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Double(double value);  // non-finite → null
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // A value that is already JSON text (inserted verbatim).
  JsonWriter& RawValue(std::string_view json);

  // True when every container is closed and no call was out of place (a
  // value without a key inside an object, a key outside one, ...).
  bool complete() const { return stack_.empty() && !misuse_ && wrote_root_; }
  bool misused() const { return misuse_; }

  // Writes the text produced so far to `file` and clears the buffer.
  // Returns false on a write error.
  bool FlushTo(std::FILE* file);

  // Appends `s` as a quoted, escaped JSON string.
  static void AppendQuoted(std::string_view s, std::string* out);
  // Shortest round-trip text of a finite double ("0.1", "1e+300", "3").
  static std::string FormatDouble(double value);

 private:
  struct Level {
    bool is_object;
    bool empty = true;
    bool have_key = false;
  };
  void BeforeValue();
  void NewLine();
  JsonWriter& Close(bool is_object);

  std::string* out_;
  int indent_;
  std::vector<Level> stack_;
  bool misuse_ = false;
  bool wrote_root_ = false;
};

}  // namespace sightline::json

#endif  // SIGHTLINE_LIB_TRACE_JSON_WRITER_H_
