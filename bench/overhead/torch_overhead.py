#!/usr/bin/env python3
"""bench/overhead/torch_overhead.py — PyTorch small-op loop cost per op.

  python3 torch_overhead.py --mode plain            # no profiler
  python3 torch_overhead.py --mode torch-profiler   # torch.profiler, CUDA activity only
  sightline profile -- python3 torch_overhead.py --mode plain   # sightline

`x.add_(1)` on a 32-element CUDA tensor, `--ops` per repetition, median of
`--reps`: prints "OVERHEAD mode=... median_us_per_op=... median_cpu_us_per_op=..."
(the second is this thread's CPU time: without the VM host's steal time).
With --chunk-log PATH the repetitions run in chunks of --chunk ops, each
written to PATH as "START_NS END_NS US_PER_OP" (CLOCK_MONOTONIC; in-process
A/B rounds, bench/overhead/ab.sh); with SIGHTLINE_AB_GO=PATH, PATH is created
after the first repetition (the A/B switching starts then).
"""
import argparse
import os
import statistics
import time

import torch


def loop(ops, x):
    for _ in range(ops):
        x.add_(1)


def nested(depth, fn, *args):
    """Runs fn `depth` Python frames deeper (Python stack cost grows with depth)."""
    if depth <= 0:
        return fn(*args)
    return nested(depth - 1, fn, *args)


def run(ops, x, cpu, depth=0):
    """Wall µs per op; appends this thread's CPU µs per op to `cpu` (no
    steal time from the VM's host in it)."""
    t0, c0 = time.perf_counter(), time.thread_time()
    nested(depth, loop, ops, x)
    torch.cuda.synchronize()
    cpu.append((time.thread_time() - c0) * 1e6 / ops)
    return (time.perf_counter() - t0) * 1e6 / ops


class Step:
    """A real training step: 4-layer MLP, forward, backward, AdamW (~30 launches)."""

    def __init__(self):
        self.model = torch.nn.Sequential(
            torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 512),
            torch.nn.GELU(), torch.nn.Linear(512, 256)).cuda()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        self.x = torch.randn(64, 256, device="cuda")

    def add_(self, _):
        loss = self.model(self.x).square().mean()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="plain",
                   choices=["plain", "torch-profiler", "torch-profiler-shapes"])
    p.add_argument("--depth", type=int, default=0, help="extra Python frames around the loop")
    p.add_argument("--workload", default="add", choices=["add", "step"],
                   help="add: one x.add_(1) per op; step: one MLP training step per op")
    p.add_argument("--ops", type=int, default=100000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--chunk-log", default=None)
    p.add_argument("--chunk", type=int, default=1000)
    a = p.parse_args()
    x = torch.zeros(32, device="cuda") if a.workload == "add" else Step()
    if a.workload == "step":
        a.ops = max(1, a.ops // 50)  # a step is ~50x an add
    run(min(1000, a.ops), x, [], a.depth)  # warm-up
    times, cpu = [], []
    if a.mode.startswith("torch-profiler"):
        from torch.profiler import profile, ProfilerActivity
        shapes = a.mode == "torch-profiler-shapes"
        activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if shapes else [ProfilerActivity.CUDA]
        with profile(activities=activities, record_shapes=shapes):
            for _ in range(a.reps):
                times.append(run(a.ops, x, cpu, a.depth))
    elif a.chunk_log:
        chunks = []
        for _ in range(a.reps):
            t0 = time.monotonic_ns()
            for _ in range(max(1, a.ops // a.chunk)):
                c0 = time.monotonic_ns()
                us = run(a.chunk, x, cpu, a.depth)
                chunks.append(f"{c0} {time.monotonic_ns()} {us:.4f}\n")
            times.append((time.monotonic_ns() - t0) / 1e3 / (max(1, a.ops // a.chunk) * a.chunk))
            if os.environ.get("SIGHTLINE_AB_GO") and len(times) == 1:
                open(os.environ["SIGHTLINE_AB_GO"], "w").close()
        with open(a.chunk_log, "w") as f:
            f.writelines(chunks)
    else:
        for _ in range(a.reps):
            times.append(run(a.ops, x, cpu, a.depth))
    print(f"OVERHEAD mode={a.mode} workload={a.workload} depth={a.depth} ops={a.ops} reps={a.reps} "
          f"median_us_per_op={statistics.median(times):.4f} min={min(times):.4f} max={max(times):.4f} "
          f"median_cpu_us_per_op={statistics.median(cpu):.4f}")


if __name__ == "__main__":
    main()
