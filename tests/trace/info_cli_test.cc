// `sightline info` as a user runs it: the built binary in a subprocess, text
// and JSON output, exit codes and error messages.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/trace/trace_test_util.h"

namespace sightline::trace::testing {
namespace {

using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

std::string Binary() {
  const char* dir = std::getenv("SIGHTLINE_BINARY_DIR");
  return std::string(dir ? dir : ".") + "/tools/sightline/sightline";
}

RunResult RunCli(std::vector<std::string> args) {
  std::string dir = MakeTempDir();
  std::string out_path = dir + "/out", err_path = dir + "/err";
  pid_t pid = fork();
  if (pid == 0) {
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    dup2(err, 2);
    std::string binary = Binary();
    std::vector<char*> argv = {binary.data()};
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  RunResult r;
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFile(out_path);
  r.err = ReadFile(err_path);
  RemoveTree(dir);
  return r;
}

google::protobuf::Struct ParseJson(const std::string& text) {
  google::protobuf::Struct parsed;
  auto status = google::protobuf::util::JsonStringToMessage(text, &parsed);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << text;
  return parsed;
}

class InfoCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access(Binary().c_str(), X_OK), 0) << "missing " << Binary();
    dir_ = MakeTempDir();
    std::string bytes;
    {
      TraceWriter writer(OpenMemorySink(&bytes), WriterOptions{4096});
      writer.Begin(SampleHeader());
      for (const AnyEvent& e : EveryKindFullySet(&writer, 1700000000000000000ull)) {
        AddTo(writer, e);
      }
      for (const AnyEvent& e : RealisticMix(2000)) AddTo(writer, e);
      writer.Finish("exit");
    }
    full_ = bytes;
    WriteFile(Path("good.sltrace"), bytes);
  }
  void TearDown() override { RemoveTree(dir_); }
  std::string Path(const std::string& name) { return dir_ + "/" + name; }
  std::string dir_;
  std::string full_;
};

TEST_F(InfoCliTest, TextShowsHeaderDevicesCountsSpanLossesAndValidity) {
  RunResult r = RunCli({"info", Path("good.sltrace")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_THAT(r.out, HasSubstr("status     COMPLETE\n"));
  EXPECT_THAT(r.out, HasSubstr("pid 31337 on gpu-node-17, rank 3 of 8"));
  EXPECT_THAT(r.out, HasSubstr("command    python train.py --batch '' ünïcode"));
  EXPECT_THAT(r.out, HasSubstr("driver 13.0, runtime 13.0, CUPTI API version 26"));
  EXPECT_THAT(r.out, HasSubstr("devices    2\n  [0] NVIDIA H200 (GH100, sm_90), 132 SMs"));
  EXPECT_THAT(r.out, HasSubstr("range nvtx:train, metrics speed-of-light"));
  EXPECT_THAT(r.out, HasSubstr("events     2015\n"));
  // The span is printed by the one duration formatter (lib/analysis/rule_util.h,
  // as in reports: "646.15 ms"), no longer with info's own three decimals.
  EXPECT_THAT(r.out, ContainsRegex("span       [0-9]+(\\.[0-9][0-9]? (us|ms|s)| ns) \\(first"));
  EXPECT_THAT(r.out, HasSubstr("  metric_range     1\n"));
  EXPECT_THAT(r.out, HasSubstr("1 records dropped by CUPTI"));
  EXPECT_THAT(r.out, HasSubstr("end        exit at "));
  EXPECT_THAT(r.out, Not(HasSubstr("problems")));
}

TEST_F(InfoCliTest, JsonFollowsTheInfoSchema) {
  RunResult r = RunCli({"info", Path("good.sltrace"), "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  google::protobuf::Struct info = ParseJson(r.out);
  const auto& f = info.fields();
  EXPECT_EQ(f.at("schema").string_value(), "sightline.info.v1");
  EXPECT_TRUE(f.at("complete").bool_value());
  EXPECT_EQ(f.at("lost_records").number_value(), 1 + 3 + 4 + 5 + 7 + 8 + 9 + 10);
  const auto& devices = f.at("devices").list_value();
  ASSERT_EQ(devices.values_size(), 2);
  EXPECT_EQ(devices.values(0).struct_value().fields().at("name").string_value(), "NVIDIA H200");
  EXPECT_EQ(devices.values(1).struct_value().fields().at("pci_bus_id").number_value(), 0x3b);
  const auto& counts = f.at("counts").struct_value().fields();
  for (const char* kind : {"kernel", "memcpy", "memset", "sync", "api", "nvtx_range",
                           "nvtx_marker", "nccl", "metric_range"}) {
    EXPECT_TRUE(counts.count(kind)) << kind;
  }
  EXPECT_EQ(counts.at("nccl").number_value(), 1);
  EXPECT_GT(counts.at("kernel").number_value(), 1000);
  double total = 0;
  for (const auto& [kind, value] : counts) total += value.number_value();
  EXPECT_EQ(total, 2015);  // one event of every kind (memory, gpu_metrics included)
  EXPECT_GT(f.at("span_ns").number_value(), 0);
  EXPECT_EQ(f.at("process").struct_value().fields().at("host").string_value(), "gpu-node-17");
  EXPECT_EQ(f.at("rank").number_value(), 3);

  // --format=json spelling works too.
  EXPECT_EQ(RunCli({"info", "--format=json", Path("good.sltrace")}).out, r.out);
}

TEST_F(InfoCliTest, TruncatedTraceIsIncompleteNotAnError) {
  WriteFile(Path("cut.sltrace"), full_.substr(0, full_.size() * 2 / 3));
  RunResult text = RunCli({"info", Path("cut.sltrace")});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("status     INCOMPLETE: truncated at byte "));
  EXPECT_THAT(text.out, HasSubstr("no footer"));
  RunResult json = RunCli({"info", Path("cut.sltrace"), "--format", "json"});
  EXPECT_EQ(json.exit_code, 0);
  google::protobuf::Struct info = ParseJson(json.out);
  EXPECT_FALSE(info.fields().at("complete").bool_value());
  EXPECT_THAT(info.fields().at("reason").string_value(), HasSubstr("truncated at byte"));
  EXPECT_GT(info.fields().at("counts").struct_value().fields().at("kernel").number_value(), 100);
}

TEST_F(InfoCliTest, BadInputExitsTwoWithOneClearMessage) {
  std::string newer = full_;
  newer[8] = 9;
  WriteFile(Path("newer.sltrace"), newer);
  WriteFile(Path("notrace.json"), "{\"traceEvents\": []}");
  WriteFile(Path("empty.sltrace"), "");
  std::string bad_header = full_;
  bad_header[40] ^= 4;
  WriteFile(Path("bad_header.sltrace"), bad_header);
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"info", Path("missing.sltrace")}, Path("missing.sltrace") + ": cannot open: No such file"},
      {{"info", dir_}, dir_ + ": is a directory"},
      {{"info", Path("notrace.json")}, Path("notrace.json") + ": not a sightline trace"},
      {{"info", Path("empty.sltrace")}, Path("empty.sltrace") + ": empty file"},
      {{"info", Path("newer.sltrace")}, "format version 9 (at byte 8) is newer"},
      {{"info", Path("bad_header.sltrace")}, "damaged header at byte 12"},
      {{"info"}, "info: missing TRACE"},
      {{"info", Path("good.sltrace"), "--format", "xml"}, "unknown format 'xml'"},
      {{"info", Path("good.sltrace"), "--format"}, "--format needs a value"},
      {{"info", Path("good.sltrace"), "--frobnicate"}, "unknown option '--frobnicate'"},
      {{"info", Path("good.sltrace"), Path("good.sltrace")}, "one trace at a time"},
  };
  for (const Case& c : cases) {
    RunResult r = RunCli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.message;
    EXPECT_EQ(r.out, "") << c.message;
    EXPECT_THAT(r.err, AllOf(HasSubstr("sightline: "), HasSubstr(c.message)));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST_F(InfoCliTest, HelpExitsZero) {
  RunResult r = RunCli({"info", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("info TRACE [--format text|json]"));
}

}  // namespace
}  // namespace sightline::trace::testing
