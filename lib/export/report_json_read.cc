// lib/export/report_json_read.cc — see report_json_read.h.
#include "lib/export/report_json_read.h"

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/trace/input_file.h"

namespace sightline::exporter {
namespace {

struct Value {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  bool boolean = false;
  double number = 0;
  std::string str;
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> members;

  const Value* Get(std::string_view key) const {
    for (const auto& [k, v] : members) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  double Num(std::string_view key, double fallback = 0) const {
    const Value* v = Get(key);
    return v && v->type == kNumber ? v->number : fallback;
  }
  std::string Str(std::string_view key) const {
    const Value* v = Get(key);
    return v && v->type == kString ? v->str : std::string();
  }
  const std::vector<Value>& Arr(std::string_view key) const {
    static const std::vector<Value> kEmpty;
    const Value* v = Get(key);
    return v && v->type == kArray ? v->items : kEmpty;
  }
};

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  bool Parse(Value* out) {
    if (!ParseValue(out, 0)) return false;
    SkipSpace();
    if (pos_ != s_.size()) return Fail("trailing data after the document");
    return true;
  }
  size_t pos() const { return pos_; }
  const std::string& error() const { return error_; }

 private:
  bool Fail(const char* what) {
    if (error_.empty()) error_ = what;
    return false;
  }
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return Fail("invalid literal");
    pos_ += word.size();
    return true;
  }
  bool ParseValue(Value* v, int depth) {
    if (depth > 64) return Fail("nesting deeper than 64");
    SkipSpace();
    if (pos_ >= s_.size()) return Fail("unexpected end of input");
    char c = s_[pos_];
    if (c == '{') return ParseObject(v, depth);
    if (c == '[') return ParseArray(v, depth);
    if (c == '"') {
      v->type = Value::kString;
      return ParseString(&v->str);
    }
    if (c == 't') { v->type = Value::kBool; v->boolean = true; return Literal("true"); }
    if (c == 'f') { v->type = Value::kBool; return Literal("false"); }
    if (c == 'n') { v->type = Value::kNull; return Literal("null"); }
    if (c == '-' || (c >= '0' && c <= '9')) {
      std::string num;
      while (pos_ < s_.size() && std::string_view("+-0123456789.eE").find(s_[pos_]) != std::string_view::npos) {
        num += s_[pos_++];
      }
      char* end = nullptr;
      v->type = Value::kNumber;
      v->number = std::strtod(num.c_str(), &end);
      if (end != num.c_str() + num.size()) return Fail("invalid number");
      return true;
    }
    return Fail("unexpected character");
  }
  bool ParseString(std::string* out) {
    ++pos_;  // opening quote
    while (pos_ < s_.size()) {
      char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return Fail("control character in string");
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (pos_ >= s_.size()) break;
      char e = s_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': *out += e; break;
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'n': *out += '\n'; break;
        case 'r': *out += '\r'; break;
        case 't': *out += '\t'; break;
        case 'u': {
          if (pos_ + 4 > s_.size()) return Fail("short \\u escape");
          unsigned cp = std::strtoul(std::string(s_.substr(pos_, 4)).c_str(), nullptr, 16);
          pos_ += 4;
          // BMP only (surrogate pairs become U+FFFD): names are ASCII in practice.
          if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
          if (cp < 0x80) {
            *out += static_cast<char>(cp);
          } else if (cp < 0x800) {
            *out += static_cast<char>(0xc0 | (cp >> 6));
            *out += static_cast<char>(0x80 | (cp & 0x3f));
          } else {
            *out += static_cast<char>(0xe0 | (cp >> 12));
            *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            *out += static_cast<char>(0x80 | (cp & 0x3f));
          }
          break;
        }
        default: return Fail("invalid escape");
      }
    }
    return Fail("unterminated string");
  }
  bool ParseArray(Value* v, int depth) {
    v->type = Value::kArray;
    ++pos_;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return true; }
    while (true) {
      v->items.emplace_back();
      if (!ParseValue(&v->items.back(), depth + 1)) return false;
      SkipSpace();
      if (pos_ >= s_.size()) return Fail("unterminated array");
      if (s_[pos_] == ',') { ++pos_; continue; }
      if (s_[pos_] == ']') { ++pos_; return true; }
      return Fail("expected , or ] in array");
    }
  }
  bool ParseObject(Value* v, int depth) {
    v->type = Value::kObject;
    ++pos_;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return true; }
    while (true) {
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("expected a member name");
      std::string key;
      if (!ParseString(&key)) return false;
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ':') return Fail("expected : after a member name");
      ++pos_;
      v->members.emplace_back(std::move(key), Value());
      if (!ParseValue(&v->members.back().second, depth + 1)) return false;
      SkipSpace();
      if (pos_ >= s_.size()) return Fail("unterminated object");
      if (s_[pos_] == ',') { ++pos_; continue; }
      if (s_[pos_] == '}') { ++pos_; return true; }
      return Fail("expected , or } in object");
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

analysis::Severity SeverityFromName(const std::string& s) {
  if (s == "high") return analysis::Severity::kHigh;
  if (s == "medium") return analysis::Severity::kMedium;
  if (s == "low") return analysis::Severity::kLow;
  return analysis::Severity::kInfo;
}

// Integer fields (ids, counts, bytes, nanoseconds): a number outside the
// field's range (negative for a count, 1e300, 1e999 read as infinity) is an
// error naming the field, never an out-of-range conversion; a fraction is
// truncated. A missing or non-number field reads as `fallback`.
class IntFields {
 public:
  template <typename T>
  T Get(const Value& object, std::string_view key, T fallback, std::string_view where) {
    const Value* v = object.Get(key);
    if (v == nullptr || v->type != Value::kNumber) return fallback;
    const double d = v->number;
    // [min, 2^digits): every double in it converts; 2^digits is exact.
    const double low = static_cast<double>(std::numeric_limits<T>::min());
    const double high = std::ldexp(1.0, std::numeric_limits<T>::digits);
    if (!(d >= low && d < high)) {
      if (error_.empty()) {
        error_ = absl::StrCat(std::string(where), std::string(key), ": ", d, " is outside [",
                              std::numeric_limits<T>::min(), ", ",
                              std::numeric_limits<T>::max(), "]");
      }
      return fallback;
    }
    return static_cast<T>(d);
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

}  // namespace

bool LooksLikeJson(std::string_view bytes) {
  for (char c : bytes) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') continue;
    return c == '{';
  }
  return false;
}

absl::StatusOr<analysis::Report> ReportFromJson(const std::string& name, std::string_view text) {
  Value doc;
  Parser parser(text);
  if (!parser.Parse(&doc)) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": invalid JSON at byte ", parser.pos(),
                                                   ": ", parser.error()));
  }
  if (doc.type != Value::kObject || doc.Str("schema") != analysis::kReportSchema) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": not a sightline report (expected \"schema\": \"", analysis::kReportSchema, "\")"));
  }
  analysis::Report r;
  IntFields ints;
  std::string where;
  for (const Value& t : doc.Arr("traces")) {
    where = absl::StrCat("traces[", r.traces.size(), "].");
    analysis::TraceSummary ts;
    ts.path = t.Str("path");
    ts.pid = ints.Get<uint32_t>(t, "pid", 0, where);
    ts.rank = ints.Get<int32_t>(t, "rank", -1, where);
    // Reports written before "complete" existed count as complete.
    const Value* complete = t.Get("complete");
    ts.complete = complete == nullptr || complete->type != Value::kBool || complete->boolean;
    if (!ts.complete) ts.integrity_reason = t.Str("integrity");
    r.traces.push_back(std::move(ts));
  }
  if (r.traces.empty()) {
    r.traces.push_back({});
    r.traces.back().complete = true;
  }
  r.traces[0].path = absl::StrCat(name, r.traces[0].path.empty() ? "" : " (report of ",
                                  r.traces[0].path, r.traces[0].path.empty() ? "" : ")");
  static const Value kEmptyObject = [] { Value v; v.type = Value::kObject; return v; }();
  const Value* summary = doc.Get("summary");
  if (!summary) summary = &kEmptyObject;
  r.summary.window_ns = ints.Get<uint64_t>(*summary, "window_ns", 0, "summary.");
  for (const Value& d : summary->Arr("devices")) {
    where = absl::StrCat("summary.devices[", r.summary.devices.size(), "].");
    analysis::DeviceSummary ds;
    ds.id = ints.Get<uint32_t>(d, "id", 0, where);
    ds.rank = ints.Get<int32_t>(d, "rank", -1, where);
    ds.name = d.Str("name");
    ds.gpu_utilization_pct = d.Num("gpu_utilization_pct");
    ds.memory_peak_bytes = ints.Get<uint64_t>(d, "memory_peak_bytes", 0, where);
    r.summary.devices.push_back(std::move(ds));
  }
  if (const Value* m = doc.Get("memory")) {
    const Value* recorded = m->Get("recorded");
    r.memory.recorded = recorded != nullptr && recorded->type == Value::kBool && recorded->boolean;
    for (const Value& d : m->Arr("devices")) {
      where = absl::StrCat("memory.devices[", r.memory.devices.size(), "].");
      analysis::MemoryDevice md;
      md.id = ints.Get<uint32_t>(d, "id", 0, where);
      md.rank = ints.Get<int32_t>(d, "rank", -1, where);
      md.capacity_bytes = ints.Get<uint64_t>(d, "capacity_bytes", 0, where);
      md.peak_bytes = ints.Get<uint64_t>(d, "peak_bytes", 0, where);
      md.scope_peak_bytes = ints.Get<uint64_t>(d, "scope_peak_bytes", 0, where);
      md.end_bytes = ints.Get<uint64_t>(d, "end_bytes", 0, where);
      md.growth_bytes_per_step = d.Num("growth_bytes_per_step");
      md.scope_allocations = ints.Get<uint64_t>(d, "scope_allocations", 0, where);
      md.scope_releases = ints.Get<uint64_t>(d, "scope_releases", 0, where);
      md.allocations_per_step = d.Num("allocations_per_step");
      r.memory.devices.push_back(std::move(md));
    }
  }
  if (const Value* s = summary->Get("steps")) {
    where = "summary.steps.";
    r.summary.steps.source = s->Str("source");
    r.summary.steps.name = s->Str("name");
    r.summary.steps.count = ints.Get<uint64_t>(*s, "count", 0, where);
    r.summary.steps.mean_ns = s->Num("mean_ns");
    r.summary.steps.p50_ns = ints.Get<uint64_t>(*s, "p50_ns", 0, where);
    r.summary.steps.p99_ns = ints.Get<uint64_t>(*s, "p99_ns", 0, where);
  }
  for (const Value& k : doc.Arr("kernels")) {
    where = absl::StrCat("kernels[", r.kernels.size(), "].");
    analysis::KernelRow row;
    row.name = k.Str("name");
    row.klass = k.Str("class");
    row.count = ints.Get<uint64_t>(k, "count", 0, where);
    row.total_ns = ints.Get<uint64_t>(k, "total_ns", 0, where);
    row.share_pct = k.Num("share_pct");
    r.kernels.push_back(std::move(row));
  }
  for (const Value& f : doc.Arr("findings")) {
    where = absl::StrCat("findings[", r.findings.size(), "].");
    analysis::Finding finding;
    finding.rule = f.Str("rule");
    finding.scope = f.Str("scope");
    finding.title = f.Str("title");
    finding.severity = SeverityFromName(f.Str("severity"));
    finding.est_saving_ns = ints.Get<uint64_t>(f, "est_saving_ns", 0, where);
    finding.est_saving_pct = f.Num("est_saving_pct");
    r.findings.push_back(std::move(finding));
  }
  if (!ints.error().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", ints.error()));
  }
  return r;
}

absl::StatusOr<analysis::Report> ReadReportJson(const std::string& path) {
  // Regular files only, never blocking on a FIFO (lib/trace/input_file.h).
  absl::StatusOr<std::string> text = trace::ReadInputPrefix(path, SIZE_MAX);
  if (!text.ok()) return text.status();
  return ReportFromJson(path, *text);
}

}  // namespace sightline::exporter
