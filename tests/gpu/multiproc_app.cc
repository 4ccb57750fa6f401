// tests/gpu/multiproc_app.cc — a CUDA program made of several processes, for
// tests/gpu/multiprocess.sh: no traced process may replace another's trace.
//
//   multiproc_app fork N       N memsets, fork() a child that does no CUDA work
//                              and exits, N more memsets after it ended
//   multiproc_app exec N M     N memsets, fork+exec `child M` (M memsets in
//                              its own process) and wait for it, N more
//   multiproc_app late N M     N memsets, then fork+exec `child-late M`, which
//                              starts CUDA only after this process has exited
//   multiproc_app idle N       N memsets and fork+exec `child-idle` (cuInit
//                              only, like a torch.compile worker: its trace
//                              is not kept)
// Uses memsets (no nvcc needed). Each process prints "SIGHTLINE_PROC
// role=parent|child pid=P memset=K" to stdout, once done.
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int Memsets(int n) {
  void* p = nullptr;
  if (cudaMalloc(&p, 1 << 20) != cudaSuccess) return -1;
  for (int i = 0; i < n; ++i) cudaMemsetAsync(p, i & 0xff, 1 << 20);
  cudaDeviceSynchronize();
  cudaFree(p);
  return n;
}

void Report(const char* role, int memsets) {
  std::printf("SIGHTLINE_PROC role=%s pid=%d memset=%d\n", role, static_cast<int>(getpid()),
              memsets);
  std::fflush(stdout);
}

pid_t Spawn(const char* self, const char* mode, const char* count) {
  pid_t pid = fork();
  if (pid == 0) {
    execl(self, self, mode, count, static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: multiproc_app fork|exec|late|idle N [M]\n");
    return 2;
  }
  std::string mode = argv[1];
  int n = std::atoi(argv[2]);
  if (mode == "child") {
    Report("child", Memsets(n));
    return 0;
  }
  if (mode == "child-late") {
    // Start CUDA after the parent (the run's first process) has exited and
    // closed its trace: the name is no longer held by a live writer.
    pid_t parent = getppid();
    for (int i = 0; i < 100 && getppid() == parent; ++i) usleep(50000);
    usleep(200000);
    Report("child", Memsets(n));
    return 0;
  }
  if (mode == "child-idle") {
    cuInit(0);  // initialises CUDA (and the injected collector), no CUDA call recorded
    return 0;
  }
  int done = Memsets(n);
  const char* m = argc > 3 ? argv[3] : "5";
  if (mode == "fork") {
    pid_t pid = fork();
    if (pid == 0) {
      usleep(100000);
      std::exit(0);  // runs atexit handlers: the collector must stay quiet here
    }
    waitpid(pid, nullptr, 0);
    done += Memsets(n);
  } else if (mode == "exec") {
    pid_t pid = Spawn(argv[0], "child", m);
    waitpid(pid, nullptr, 0);
    done += Memsets(n);
  } else if (mode == "late") {
    Spawn(argv[0], "child-late", m);  // not waited for
  } else if (mode == "idle") {
    pid_t pid = Spawn(argv[0], "child-idle", "0");
    waitpid(pid, nullptr, 0);
  } else {
    return 2;
  }
  Report("parent", done);
  return 0;
}
