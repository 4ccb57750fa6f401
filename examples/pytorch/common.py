"""examples/pytorch/common.py — shared by the real-PyTorch corpus scripts.

Every script runs a warm-up, then a measured steady state, and prints the
truth the analysis is judged against, measured with CUDA events:

  SIGHTLINE_STEPS name=train_step warmup=W steps=S median_ms=M p10_ms=A p90_ms=B mean_ms=C
  SIGHTLINE_MEMORY max_reserved_bytes=R max_allocated_bytes=A reserved_bytes=E

(the caching allocator's peak reserved and allocated memory over the whole
process, printed at exit: torch.cuda.max_memory_reserved() /
max_memory_allocated(), and what it holds at the end), which sightline's
memory peak of libc10_cuda.so is judged against.

A step's time is the period from its start to the next step's start on the
GPU's clock (an event recorded on the current stream as each step begins),
which is what a training loop's throughput follows whether the GPU or the
host is the bottleneck. Options common to all scripts:
  --steps N --warmup W     measured steps, warm-up steps
  --nvtx                   wrap each step in an NVTX range "train_step"
                           (for --capture-range nvtx:train_step); off by
                           default: real scripts rarely annotate
  --cuda-profiler-range    cudaProfilerStart/Stop around the measured steps
With SIGHTLINE_STEP_LOG=PATH, each measured step is also written to PATH as
"START_NS END_NS MS": the host's CLOCK_MONOTONIC when the step began and when
the next one began, and its time on the GPU's clock (in-process A/B rounds,
bench/overhead/ab.sh); with SIGHTLINE_AB_GO=PATH, PATH is created when half
of the measured steps have run (the A/B switching starts then).
"""
import argparse
import atexit
import contextlib
import os
import statistics
import time

import torch


def parser(description, variants):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--variant", choices=variants, required=True)
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--warmup", type=int, default=None)
    p.add_argument("--nvtx", action="store_true")
    p.add_argument("--cuda-profiler-range", action="store_true")
    return p


def run_steps(step_fn, args, default_steps, default_warmup, name="train_step"):
    """Runs warm-up then measured steps; prints the SIGHTLINE_STEPS line."""
    steps = args.steps if args.steps is not None else default_steps
    warmup = args.warmup if args.warmup is not None else default_warmup

    def ranged(i):
        ctx = torch.cuda.nvtx.range(name) if args.nvtx else contextlib.nullcontext()
        with ctx:
            step_fn(i)

    for i in range(warmup):
        ranged(i)
    torch.cuda.synchronize()
    if args.cuda_profiler_range:
        torch.cuda.cudart().cudaProfilerStart()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
    log_path = os.environ.get("SIGHTLINE_STEP_LOG")
    host = [0] * (steps + 1)
    go = os.environ.get("SIGHTLINE_AB_GO")
    for i in range(steps):
        if log_path:
            host[i] = time.monotonic_ns()
        if go and i == steps // 2:
            open(go, "w").close()
        events[i].record()
        ranged(warmup + i)
    host[steps] = time.monotonic_ns()
    events[steps].record()
    torch.cuda.synchronize()
    if args.cuda_profiler_range:
        torch.cuda.cudart().cudaProfilerStop()
    ms = [events[i].elapsed_time(events[i + 1]) for i in range(steps)]
    if log_path:
        with open(log_path, "w") as f:
            f.writelines(f"{host[i]} {host[i + 1]} {ms[i]:.5f}\n" for i in range(steps))
    ms.sort()

    def q(p):
        return ms[min(len(ms) - 1, int(p * len(ms)))]
    print(f"SIGHTLINE_STEPS name={name} warmup={warmup} steps={steps} "
          f"median_ms={statistics.median(ms):.4f} p10_ms={q(0.1):.4f} p90_ms={q(0.9):.4f} "
          f"mean_ms={statistics.fmean(ms):.4f}", flush=True)
    atexit.register(print_memory)
    return ms


def print_memory():
    """The allocator's peak over the whole process (what the trace covers)."""
    print(f"SIGHTLINE_MEMORY max_reserved_bytes={torch.cuda.max_memory_reserved()} "
          f"max_allocated_bytes={torch.cuda.max_memory_allocated()} "
          f"reserved_bytes={torch.cuda.memory_reserved()}", flush=True)
