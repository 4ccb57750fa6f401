"""Workload of tests/gpu/python_stacks.sh: CUDA work from known Python lines,
in threads, a generator, an exception unwinding through a launch, a per-step
.item() sync, backward(), optionally a torch.compile'd function, and a daemon
thread still launching when the interpreter shuts down. Prints OK and a
checksum; every line that matters carries a "# MARK_..." comment."""
import sys
import threading

import torch


def launch_in_thread(x, n):
    for _ in range(n):
        x.mul_(1.0001)  # MARK_THREAD


def gen_launches(x, n):
    for i in range(n):
        x.add_(1)  # MARK_GEN
        yield i


def launch_then_raise(x):
    x.sub_(1)  # MARK_RAISE
    raise ValueError("unwinding through a launch")


def step(model, opt, data):
    loss = model(data).square().mean()  # MARK_FORWARD
    loss.backward()  # MARK_BACKWARD
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.item()  # MARK_ITEM


def daemon_launcher(x):
    while True:
        x.add_(1)  # MARK_DAEMON


def main():
    compile_it = "--compile" in sys.argv
    torch.manual_seed(0)
    dev = "cuda"
    x = torch.zeros(1 << 16, device=dev)
    threads = [threading.Thread(target=launch_in_thread, args=(torch.ones(1024, device=dev), 200))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for _ in gen_launches(x, 100):
        pass
    for _ in range(20):
        try:
            launch_then_raise(x)
        except ValueError:
            pass
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(),
                                torch.nn.Linear(1024, 512)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = torch.randn(256, 512, device=dev)
    fn = model
    if compile_it:
        fn = torch.compile(model)
    total = 0.0
    for _ in range(30):
        total += step(fn, opt, data)
    torch.cuda.synchronize()
    print("OK checksum=%.3f x=%.1f" % (total, float(x[0])))
    sys.stdout.flush()
    # Shutdown with a thread still launching.
    threading.Thread(target=daemon_launcher, args=(torch.zeros(1024, device=dev),),
                     daemon=True).start()


if __name__ == "__main__":
    main()
