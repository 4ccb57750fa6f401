// tools/sightline/command.h — subcommand registry of the `sightline` CLI.
//
// Each subcommand lives in its own cmd_<name>.cc and registers itself with
// SIGHTLINE_COMMAND. Exit codes (DESIGN.md): 0 ok; 1 findings/regression over a
// requested threshold; 2 usage or input error, with one clear message on stderr
// naming the file and the problem.
#ifndef SIGHTLINE_TOOLS_SIGHTLINE_COMMAND_H_
#define SIGHTLINE_TOOLS_SIGHTLINE_COMMAND_H_

#include <string>
#include <vector>

namespace sightline::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitThreshold = 1;
inline constexpr int kExitUsage = 2;

using CommandFn = int (*)(const std::vector<std::string>& args);

struct Command {
  const char* name;
  const char* usage;    // one line: "info TRACE [--format text|json]"
  const char* summary;  // one sentence
  CommandFn run;
};

bool RegisterCommand(const Command& command);
const std::vector<Command>& Commands();

// Prints "sightline: <message>" to stderr and returns kExitUsage.
int UsageError(const std::string& message);

// Path of the running executable's directory (for finding the injection lib).
std::string ExecutableDir();
// True for an existing regular file (stat, follows links).
bool IsRegularFile(const std::string& path);
// libsightline_inject.so for `profile` and `monitor`: SIGHTLINE_INJECT_LIB, else
// next to the executable (build tree ../../injection, install ../lib, ../lib64,
// the same directory, ../injection), resolved to an absolute path; "" if none.
std::string FindInjectionLibrary();

}  // namespace sightline::cli

#define SIGHTLINE_CONCAT_INNER(a, b) a##b
#define SIGHTLINE_CONCAT(a, b) SIGHTLINE_CONCAT_INNER(a, b)
#define SIGHTLINE_COMMAND(name, usage, summary, fn)                                  \
  static const bool SIGHTLINE_CONCAT(sightline_registered_, __LINE__) =              \
      ::sightline::cli::RegisterCommand({name, usage, summary, fn})

#endif  // SIGHTLINE_TOOLS_SIGHTLINE_COMMAND_H_
