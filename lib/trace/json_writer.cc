// Streaming JSON writer: escaping, number formatting, structure.
#include "lib/trace/json_writer.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace sightline::json {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 if invalid (overlong
// forms, surrogates and code points above U+10FFFF are invalid).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b0 = byte(i);
  size_t n = s.size() - i;
  auto cont = [&](size_t k) { return k < s.size() && (byte(k) & 0xC0) == 0x80; };
  if (b0 >= 0xC2 && b0 <= 0xDF) return n >= 2 && cont(i + 1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (n < 3 || !cont(i + 1) || !cont(i + 2)) return 0;
    unsigned char b1 = byte(i + 1);
    if (b0 == 0xE0 && b1 < 0xA0) return 0;   // overlong
    if (b0 == 0xED && b1 >= 0xA0) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (n < 4 || !cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    unsigned char b1 = byte(i + 1);
    if (b0 == 0xF0 && b1 < 0x90) return 0;   // overlong
    if (b0 == 0xF4 && b1 >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

void JsonWriter::AppendQuoted(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->reserve(out->size() + s.size() + 2);
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t len = Utf8SequenceLength(s, i);
      if (len == 0) {
        out->append("\xEF\xBF\xBD");  // U+FFFD for each invalid byte
        ++i;
      } else {
        out->append(s.data() + i, len);
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (c < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 15]);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out->push_back('"');
}

std::string JsonWriter::FormatDouble(double value) {
  if (!std::isfinite(value)) return "null";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0";
  char buf[40];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, value);
    if (precision == 17 || std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

void JsonWriter::NewLine() {
  if (indent_ <= 0) return;
  out_->push_back('\n');
  out_->append(stack_.size() * static_cast<size_t>(indent_), ' ');
}

void JsonWriter::BeforeValue() {
  if (stack_.empty()) {
    if (wrote_root_) misuse_ = true;  // a second top-level value
    wrote_root_ = true;
    return;
  }
  Level& level = stack_.back();
  if (level.is_object) {
    if (!level.have_key) misuse_ = true;  // value without a key
    level.have_key = false;
    return;
  }
  if (!level.empty) out_->push_back(',');
  level.empty = false;
  NewLine();
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  if (stack_.empty() || !stack_.back().is_object || stack_.back().have_key) {
    misuse_ = true;
    return *this;
  }
  Level& level = stack_.back();
  if (!level.empty) out_->push_back(',');
  level.empty = false;
  level.have_key = true;
  NewLine();
  AppendQuoted(key, out_);
  out_->append(indent_ > 0 ? ": " : ":");
  return *this;
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_->push_back('{');
  stack_.push_back({true});
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_->push_back('[');
  stack_.push_back({false});
  return *this;
}

JsonWriter& JsonWriter::Close(bool is_object) {
  if (stack_.empty() || stack_.back().is_object != is_object || stack_.back().have_key) {
    misuse_ = true;
    if (stack_.empty()) return *this;
  }
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) NewLine();
  out_->push_back(is_object ? '}' : ']');
  return *this;
}

JsonWriter& JsonWriter::EndObject() { return Close(true); }
JsonWriter& JsonWriter::EndArray() { return Close(false); }

JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  AppendQuoted(value, out_);
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) {
  BeforeValue();
  out_->append(std::to_string(value));
  return *this;
}

JsonWriter& JsonWriter::Uint(uint64_t value) {
  BeforeValue();
  out_->append(std::to_string(value));
  return *this;
}

JsonWriter& JsonWriter::Double(double value) {
  BeforeValue();
  out_->append(FormatDouble(value));
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_->append(value ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_->append("null");
  return *this;
}

JsonWriter& JsonWriter::RawValue(std::string_view json) {
  BeforeValue();
  out_->append(json);
  return *this;
}

bool JsonWriter::FlushTo(std::FILE* file) {
  bool ok = out_->empty() || std::fwrite(out_->data(), 1, out_->size(), file) == out_->size();
  out_->clear();
  return ok;
}

}  // namespace sightline::json
