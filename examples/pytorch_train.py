#!/usr/bin/env python3
"""examples/pytorch_train.py — a small PyTorch training loop, slow and fixed.

slow:  the batch is built on the CPU each step (pageable tensor, blocking
       .cuda()), and the loss is read with .item() every step (a sync).
fixed (--fixed): batches pre-staged in pinned memory and copied with
       non_blocking=True; the loss is read every 10 steps.
--torch-profiler: run the loop inside torch.profiler (CUDA activity) to show
       that sightline and torch.profiler coexist (one warning, correct output).
Prints "SIGHTLINE_EXPECT example=pytorch_train ... steps=N loss=..." at the end.

Run: sightline profile -o torch.sltrace -- python3 examples/pytorch_train.py
"""
import argparse
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fixed", action="store_true")
    p.add_argument("--variant", choices=["slow", "fixed"], default=None)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--torch-profiler", action="store_true")
    args = p.parse_args()
    if args.variant is not None:
        args.fixed = args.variant == "fixed"
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    if args.fixed:
        staged = [(torch.randn(args.batch, 512).pin_memory(),
                   torch.randint(0, 10, (args.batch,)).pin_memory()) for _ in range(8)]

    def step(i):
        if args.fixed:
            x, y = staged[i % len(staged)]
            x = x.to(dev, non_blocking=True)
            y = y.to(dev, non_blocking=True)
        else:
            x = torch.randn(args.batch, 512)
            x = torch.tanh(x) * 2.0 + x.pow(2).mean()  # CPU "preprocessing"
            y = torch.randint(0, 10, (args.batch,))
            x, y = x.cuda(), y.cuda()
        torch.cuda.nvtx.range_push("step")
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        torch.cuda.nvtx.range_pop()
        if not args.fixed or i % 10 == 9:
            return loss.item()
        return None

    last = None
    t0 = time.perf_counter()
    if args.torch_profiler:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i in range(args.steps):
                v = step(i)
                last = v if v is not None else last
        n_events = len(prof.events())
        print(f"torch.profiler recorded {n_events} events")
    else:
        for i in range(args.steps):
            v = step(i)
            last = v if v is not None else last
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) * 1e3
    variant = "fixed" if args.fixed else "slow"
    print(f"SIGHTLINE_EXPECT example=pytorch_train variant={variant} steps={args.steps} "
          f"nvtx_range={args.steps} loss={last:.4f} wall_ms={wall:.3f}")


if __name__ == "__main__":
    main()
