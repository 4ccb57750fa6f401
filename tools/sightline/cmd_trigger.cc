// sightline trigger PID — asks the monitor in a running process for a capture
// of its next steps (same as `kill -USR2 PID`, but safe: SIGUSR2 is sent only
// when the process runs sightline's monitor agent, whose thread is named
// "sl-monitor"; the default action of SIGUSR2 would end any other process).
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/types.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tools/sightline/command.h"

namespace sightline::cli {
namespace {

constexpr const char* kAgentThread = "sl-monitor";  // lib/monitor/monitor_agent.h

bool RunsMonitorAgent(long pid) {
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(dir + "/" + e->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name) && name == kAgentThread) {
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}

int RunTrigger(const std::vector<std::string>& args) {
  if (args.size() != 1) return UsageError("trigger: expected one PID (usage: sightline trigger PID)");
  char* end = nullptr;
  errno = 0;
  long pid = std::strtol(args[0].c_str(), &end, 10);
  if (args[0].empty() || *end != '\0' || errno != 0 || pid <= 1 || pid > 0x3fffffff) {
    return UsageError("trigger: '" + args[0] + "' is not a process id");
  }
  if (kill(static_cast<pid_t>(pid), 0) != 0) {
    return UsageError("trigger: process " + args[0] + ": " +
                      (errno == ESRCH ? std::string("no such process")
                                      : std::string(std::strerror(errno))));
  }
  if (!RunsMonitorAgent(pid)) {
    return UsageError("trigger: process " + args[0] +
                      " does not run sightline's monitor (start it with `sightline monitor -- "
                      "CMD` or SIGHTLINE_MODE=monitor; the monitor starts at the first CUDA "
                      "call); no signal sent");
  }
  if (kill(static_cast<pid_t>(pid), SIGUSR2) != 0) {
    return UsageError("trigger: cannot signal process " + args[0] + ": " + std::strerror(errno));
  }
  std::printf("sightline: capture requested in process %ld\n", pid);
  return kExitOk;
}

}  // namespace

SIGHTLINE_COMMAND("trigger", "trigger PID",
                  "Ask a monitored process to capture its next steps now (like SIGUSR2)",
                  RunTrigger);

}  // namespace sightline::cli
