// tools/sightline/child_process.cc — see child_process.h.
#include "tools/sightline/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tools/sightline/command.h"

extern char** environ;

namespace sightline::cli {
namespace {

pid_t g_child = 0;
void ForwardSignal(int signo) {
  if (g_child > 0) kill(g_child, signo);
}

}  // namespace

std::string InjectionLibrary(const std::string& name, std::string* problem) {
  std::string lib = FindInjectionLibrary();
  if (lib.empty() || !IsRegularFile(lib)) {
    *problem = name + ": cannot find libsightline_inject.so next to the sightline executable (" +
               ExecutableDir() + "); set SIGHTLINE_INJECT_LIB to its path";
    return "";
  }
  return lib;
}

void PrepareInjectionEnvironment(const std::string& library) {
  if (const char* cuda_home = std::getenv("CUDA_HOME"); cuda_home != nullptr && *cuda_home) {
    std::string path = std::string(cuda_home) + "/lib64:" + cuda_home + "/extras/CUPTI/lib64";
    if (const char* old = std::getenv("LD_LIBRARY_PATH"); old != nullptr && *old) {
      path += std::string(":") + old;
    }
    setenv("LD_LIBRARY_PATH", path.c_str(), 1);
  }
  setenv("CUDA_INJECTION64_PATH", library.c_str(), 1);
  setenv("NVTX_INJECTION64_PATH", library.c_str(), 1);
}

pid_t StartCommand(const std::vector<std::string>& command, char* const* envp,
                   void (*in_child)(void* arg), void* arg, std::string* error) {
  std::vector<std::string> words = command;  // execvp wants char*, not const char*
  std::vector<char*> argv;
  for (std::string& a : words) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (envp == nullptr) envp = environ;
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    *error = std::string("pipe failed: ") + std::strerror(errno);
    return -1;
  }
  pid_t child = fork();
  if (child < 0) {
    *error = std::string("fork failed: ") + std::strerror(errno);
    close(err_pipe[0]);
    close(err_pipe[1]);
    return -1;
  }
  if (child == 0) {
    close(err_pipe[0]);
    if (in_child != nullptr) in_child(arg);
    execvpe(argv[0], argv.data(), envp);
    int e = errno;
    ssize_t n = write(err_pipe[1], &e, sizeof(e));
    (void)n;
    _exit(127);
  }
  close(err_pipe[1]);
  int exec_errno = 0;
  // Closed by a successful exec (O_CLOEXEC): nothing to read.
  if (read(err_pipe[0], &exec_errno, sizeof(exec_errno)) == sizeof(exec_errno)) {
    close(err_pipe[0]);
    waitpid(child, nullptr, 0);
    *error = "cannot run '" + command[0] + "': " + std::strerror(exec_errno);
    return -1;
  }
  close(err_pipe[0]);
  return child;
}

void ForwardSignalsTo(pid_t child, std::initializer_list<int> signals) {
  g_child = child;
  struct sigaction sa = {};
  sa.sa_handler = &ForwardSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : signals) sigaction(s, &sa, nullptr);
}

int ExitCodeOf(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status)
                           : (WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1);
}

}  // namespace sightline::cli
