#!/usr/bin/env python3
"""bench/overhead/torch_overhead.py — PyTorch small-op loop cost per op.

  python3 torch_overhead.py --mode plain            # no profiler
  python3 torch_overhead.py --mode torch-profiler   # torch.profiler, CUDA activity only
  sightline profile -- python3 torch_overhead.py --mode plain   # sightline

`x.add_(1)` on a 32-element CUDA tensor, `--ops` per repetition, median of
`--reps`: prints "OVERHEAD mode=... median_us_per_op=... median_cpu_us_per_op=..."
(the second is this thread's CPU time: without the VM host's steal time).
"""
import argparse
import statistics
import time

import torch


def run(ops, x, cpu):
    """Wall µs per op; appends this thread's CPU µs per op to `cpu` (no
    steal time from the VM's host in it)."""
    t0, c0 = time.perf_counter(), time.thread_time()
    for _ in range(ops):
        x.add_(1)
    torch.cuda.synchronize()
    cpu.append((time.thread_time() - c0) * 1e6 / ops)
    return (time.perf_counter() - t0) * 1e6 / ops


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="plain", choices=["plain", "torch-profiler"])
    p.add_argument("--ops", type=int, default=100000)
    p.add_argument("--reps", type=int, default=5)
    a = p.parse_args()
    x = torch.zeros(32, device="cuda")
    run(1000, x, [])  # warm-up
    times, cpu = [], []
    if a.mode == "torch-profiler":
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]):
            for _ in range(a.reps):
                times.append(run(a.ops, x, cpu))
    else:
        for _ in range(a.reps):
            times.append(run(a.ops, x, cpu))
    print(f"OVERHEAD mode={a.mode} ops={a.ops} reps={a.reps} "
          f"median_us_per_op={statistics.median(times):.4f} min={min(times):.4f} max={max(times):.4f} "
          f"median_cpu_us_per_op={statistics.median(cpu):.4f}")


if __name__ == "__main__":
    main()
