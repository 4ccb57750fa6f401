// tools/sightline/child_process.h — running the command of `profile` and
// `monitor` under the injected library: its environment, fork/exec with a
// clear error when the command cannot run, signal forwarding, exit codes.
#ifndef SIGHTLINE_TOOLS_SIGHTLINE_CHILD_PROCESS_H_
#define SIGHTLINE_TOOLS_SIGHTLINE_CHILD_PROCESS_H_

#include <sys/types.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace sightline::cli {

// FindInjectionLibrary() (command.h), or "" with *problem saying where to
// put it ("NAME: cannot find libsightline_inject.so next to ...").
std::string InjectionLibrary(const std::string& name, std::string* problem);

// Sets, in our environment (inherited by the child), CUDA_INJECTION64_PATH
// and NVTX_INJECTION64_PATH to `library`; with $CUDA_HOME set, puts its
// libraries and CUPTI's first on LD_LIBRARY_PATH, so libcupti matches the
// CUDA install.
void PrepareInjectionEnvironment(const std::string& library);

// Forks and execs `command` (PATH lookup) with `envp` (nullptr: ours).
// `in_child`, when set, runs in the child just before exec: async-signal-safe
// work only. Returns the child's pid once exec succeeded, or -1 with *error
// ("cannot run 'x': No such file or directory", "fork failed: ...").
pid_t StartCommand(const std::vector<std::string>& command, char* const* envp,
                   void (*in_child)(void* arg), void* arg, std::string* error);

// From now on these signals, sent to us, are sent on to `child` (SA_RESTART).
void ForwardSignalsTo(pid_t child, std::initializer_list<int> signals);

// A shell's exit code for a wait status: the exit code, or 128 + the signal.
int ExitCodeOf(int status);

// Whether CMD runs a Python interpreter: its basename is python*, or it is a
// "#!" script whose interpreter (or `env` argument) is.
bool IsPythonCommand(const std::string& cmd);

// The directory holding sightline's Python start-up hook (sitecustomize.py):
// SIGHTLINE_PYTHON_DIR, else share/sightline/python beside the executable's
// install or build tree; "" when none.
std::string FindPythonHookDir();

// Puts `hook_dir` first on PYTHONPATH (ours, inherited by the child) and sets
// SIGHTLINE_PYTORCH=mode for the hook (python/sitecustomize.py).
void PreparePythonHook(const std::string& hook_dir, const std::string& mode);

}  // namespace sightline::cli

#endif  // SIGHTLINE_TOOLS_SIGHTLINE_CHILD_PROCESS_H_
