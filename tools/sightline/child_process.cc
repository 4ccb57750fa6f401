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

// Whether CMD runs a Python interpreter: its basename is python*, or it is a
// "#!" script whose interpreter (or `env` argument) is.
bool IsPythonCommand(const std::string& cmd) {
  auto is_python = [](std::string path) {
    size_t slash = path.rfind('/');
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    return base.rfind("python", 0) == 0;
  };
  if (is_python(cmd)) return true;
  std::string path = cmd;
  if (cmd.find('/') == std::string::npos) {
    const char* env_path = std::getenv("PATH");
    std::string dirs = env_path != nullptr ? env_path : "";
    path.clear();
    size_t begin = 0;
    while (begin <= dirs.size()) {
      size_t colon = dirs.find(':', begin);
      std::string dir = dirs.substr(begin, colon == std::string::npos ? std::string::npos
                                                                       : colon - begin);
      std::string candidate = (dir.empty() ? "." : dir) + "/" + cmd;
      if (access(candidate.c_str(), X_OK) == 0 && IsRegularFile(candidate)) {
        path = candidate;
        break;
      }
      if (colon == std::string::npos) break;
      begin = colon + 1;
    }
    if (path.empty()) return false;
  }
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  char buf[256] = {};
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n < 2 || buf[0] != '#' || buf[1] != '!') return false;
  std::string line(buf + 2, static_cast<size_t>(n - 2));
  line = line.substr(0, line.find('\n'));
  std::vector<std::string> words;
  for (size_t i = 0; i < line.size();) {
    size_t j = line.find_first_of(" \t", i);
    if (j == std::string::npos) j = line.size();
    if (j > i) words.push_back(line.substr(i, j - i));
    i = j + 1;
  }
  if (words.empty()) return false;
  if (is_python(words[0])) return true;
  if (words[0].size() >= 4 && words[0].compare(words[0].size() - 4, 4, "/env") == 0) {
    for (size_t k = 1; k < words.size(); ++k) {
      if (words[k][0] == '-') continue;
      return is_python(words[k]);
    }
  }
  return false;
}

// The directory holding sightline's sitecustomize.py (--pytorch).
std::string FindPythonHookDir() {
  if (const char* env = std::getenv("SIGHTLINE_PYTHON_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  std::string dir = ExecutableDir();
  for (const char* rel : {"/../share/sightline/python", "/../../share/sightline/python"}) {
    std::string candidate = dir + rel;
    if (IsRegularFile(candidate + "/sitecustomize.py")) {
      char resolved[4096];
      if (realpath(candidate.c_str(), resolved) != nullptr) return resolved;
      return candidate;
    }
  }
  return "";
}

void PreparePythonHook(const std::string& hook_dir, const std::string& mode) {
  std::string path = hook_dir;
  if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0') {
    path += std::string(":") + old;
  }
  setenv("PYTHONPATH", path.c_str(), 1);
  setenv("SIGHTLINE_PYTORCH", mode.c_str(), 1);
}

}  // namespace sightline::cli
