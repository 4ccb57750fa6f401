// sightline — CLI entry point: dispatches to the registered subcommands.
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lib/trace/terminal_text.h"
#include "tools/sightline/command.h"

namespace sightline::cli {

std::vector<Command>& MutableCommands() {
  static auto* commands = new std::vector<Command>();
  return *commands;
}

bool RegisterCommand(const Command& command) {
  MutableCommands().push_back(command);
  return true;
}

const std::vector<Command>& Commands() { return MutableCommands(); }

int UsageError(const std::string& message) {
  // Messages quote file names and trace contents: escaped for the terminal.
  std::fprintf(stderr, "sightline: %s\n", trace::EscapeTerminalText(message).c_str());
  return kExitUsage;
}

std::string ExecutableDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string path(buf);
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string FindInjectionLibrary() {
  if (const char* env = std::getenv("SIGHTLINE_INJECT_LIB"); env != nullptr && *env != '\0') {
    return env;
  }
  const std::string dir = ExecutableDir();
  for (const char* rel : {"/../../injection/", "/../lib/", "/../lib64/", "/", "/../injection/"}) {
    std::string candidate = dir + rel + "libsightline_inject.so";
    if (IsRegularFile(candidate)) {
      char resolved[PATH_MAX];
      if (realpath(candidate.c_str(), resolved) != nullptr) return resolved;
      return candidate;
    }
  }
  return "";
}

namespace {
void PrintHelp(FILE* out) {
  std::fprintf(out,
               "sightline %s — GPU profiler and trace analyzer\n\n"
               "usage: sightline COMMAND [ARGS...]\n\ncommands:\n",
               SIGHTLINE_VERSION);
  for (const Command& c : Commands()) {
    std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  }
  std::fprintf(out, "\nRun 'sightline COMMAND --help' for a command's options.\n");
}
}  // namespace

}  // namespace sightline::cli

int main(int argc, char** argv) {
  using namespace sightline::cli;
  if (argc < 2) {
    PrintHelp(stderr);
    return kExitUsage;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintHelp(stdout);
    return kExitOk;
  }
  if (name == "--version" || name == "version") {
    std::printf("sightline %s\n", SIGHTLINE_VERSION);
    return kExitOk;
  }
  for (const Command& c : Commands()) {
    if (name == c.name) {
      std::vector<std::string> args(argv + 2, argv + argc);
      for (const std::string& a : args) {
        if (a == "--help" || a == "-h") {
          std::printf("usage: sightline %s\n  %s\n", c.usage, c.summary);
          return kExitOk;
        }
        if (a == "--") break;
      }
      return c.run(args);
    }
  }
  return UsageError("unknown command '" + name + "' (try 'sightline --help')");
}
