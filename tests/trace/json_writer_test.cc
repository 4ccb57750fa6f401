// JsonWriter: escaping, UTF-8 handling, numbers, structure, streaming.
#include "lib/trace/json_writer.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "gtest/gtest.h"

namespace sightline::json {
namespace {

std::string Quoted(std::string_view s) {
  std::string out;
  JsonWriter::AppendQuoted(s, &out);
  return out;
}

TEST(JsonWriterTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(Quoted("plain"), "\"plain\"");
  EXPECT_EQ(Quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Quoted("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(Quoted(std::string("\x00\x01\x1f", 3)), "\"\\u0000\\u0001\\u001f\"");
  EXPECT_EQ(Quoted("\x7f/"), "\"\x7f/\"");
  EXPECT_EQ(Quoted(""), "\"\"");
}

TEST(JsonWriterTest, ValidUtf8PassesThroughInvalidBecomesReplacement) {
  EXPECT_EQ(Quoted("ünïcode ✓ 𝄞"), "\"ünïcode ✓ 𝄞\"");
  const std::string kReplacement = "\xEF\xBF\xBD";
  EXPECT_EQ(Quoted("\xff"), "\"" + kReplacement + "\"");
  EXPECT_EQ(Quoted("a\xC3"), "\"a" + kReplacement + "\"");           // truncated sequence
  EXPECT_EQ(Quoted("\xC0\xAF"), "\"" + kReplacement + kReplacement + "\"");  // overlong
  EXPECT_EQ(Quoted("\xED\xA0\x80"), "\"" + kReplacement + kReplacement + kReplacement + "\"");
  EXPECT_EQ(Quoted("\xF4\x90\x80\x80").size(), 2 + 4 * kReplacement.size());  // > U+10FFFF
}

TEST(JsonWriterTest, NumbersAreExactOrShortestRoundTrip) {
  EXPECT_EQ(JsonWriter::FormatDouble(0.1), "0.1");
  EXPECT_EQ(JsonWriter::FormatDouble(3), "3");
  EXPECT_EQ(JsonWriter::FormatDouble(-2.5e-300), "-2.5e-300");
  EXPECT_EQ(JsonWriter::FormatDouble(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(JsonWriter::FormatDouble(0), "0");
  EXPECT_EQ(JsonWriter::FormatDouble(std::nan("")), "null");
  EXPECT_EQ(JsonWriter::FormatDouble(std::numeric_limits<double>::infinity()), "null");
  for (double v : {1e-320, 123456789.123456789, 5e307, 0.30000000000000004}) {
    EXPECT_EQ(std::strtod(JsonWriter::FormatDouble(v).c_str(), nullptr), v);
  }
  std::string out;
  JsonWriter w(&out);
  w.BeginArray().Uint(UINT64_MAX).Int(INT64_MIN).Double(-INFINITY).Bool(false).Null().EndArray();
  EXPECT_EQ(out, "[18446744073709551615,-9223372036854775808,null,false,null]");
  EXPECT_TRUE(w.complete());
}

TEST(JsonWriterTest, CompactAndIndentedStructure) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject().Key("a").Int(1).Key("b").BeginArray().String("x").BeginObject().EndObject()
      .BeginArray().EndArray().EndArray().Key("c\n").RawValue("{\"raw\":true}").EndObject();
  EXPECT_EQ(out, "{\"a\":1,\"b\":[\"x\",{},[]],\"c\\n\":{\"raw\":true}}");
  EXPECT_TRUE(w.complete());

  std::string pretty;
  JsonWriter p(&pretty, 2);
  p.BeginObject().Key("k").BeginArray().Int(1).Int(2).EndArray().Key("e").BeginObject().EndObject()
      .EndObject();
  EXPECT_EQ(pretty, "{\n  \"k\": [\n    1,\n    2\n  ],\n  \"e\": {}\n}");
}

TEST(JsonWriterTest, MisuseIsDetected) {
  std::string out;
  JsonWriter a(&out);
  a.BeginObject().Int(1).EndObject();  // value without key
  EXPECT_TRUE(a.misused());
  JsonWriter b(&out);
  b.BeginArray().Key("k");  // key in an array
  EXPECT_TRUE(b.misused());
  JsonWriter c(&out);
  c.BeginArray().EndObject();  // wrong closer
  EXPECT_TRUE(c.misused());
  JsonWriter d(&out);
  d.BeginObject();
  EXPECT_FALSE(d.complete());  // still open
}

TEST(JsonWriterTest, FlushToStreamsAndClears) {
  std::string out;
  JsonWriter w(&out);
  FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  w.BeginArray();
  for (int i = 0; i < 1000; ++i) {
    w.Int(i);
    if (i % 100 == 99) {
      ASSERT_TRUE(w.FlushTo(file));
    }
  }
  w.EndArray();
  ASSERT_TRUE(w.FlushTo(file));
  EXPECT_TRUE(out.empty());
  std::rewind(file);
  std::string back;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), file)) > 0) back.append(buf, n);
  std::fclose(file);
  EXPECT_EQ(back.substr(0, 8), "[0,1,2,3");
  EXPECT_EQ(back.substr(back.size() - 5), ",999]");
}

}  // namespace
}  // namespace sightline::json
