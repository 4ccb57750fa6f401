#!/usr/bin/env python3
"""A real training loop for the monitor mode, with a slowdown switched on by a
file flag (`sightline monitor` tests and the README's worked example).

An 8-layer transformer LM (lm_train.py's TinyLM at d=1024, seq 256, batch
32: GPU-bound on the H200, the host's launches run ahead of the GPU), bf16
autocast, fused AdamW; every step wrapped in an NVTX range "train_step".
While the file named by --sync-flag exists, each step ends with
torch.cuda.synchronize() and a loss.item() readback: the GPU then idles
while the host launches the next step — the injected cause a capture's
first finding should name (sync_api). (At lm_train.py's own size, d=256 and
batch 16, the step is launch-bound: a sync then costs little and the first
finding is rightly launch_bound; --d-model/--layers/--seq/--batch choose.)

  --seconds S        run time (default 60)
  --sync-flag FILE   per-step sync while FILE exists
  --switch-after S   create FILE itself after S seconds (0 = never)
Prints "MONITOR_SWITCH step=N t=T" when it first sees the flag and
"MONITOR_DONE steps=N" at the end.
"""
import argparse
import os
import time

import torch

from lm_train import TinyLM


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--sync-flag", default="")
    p.add_argument("--switch-after", type=float, default=0)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--d-model", type=int, default=1024)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--seq", type=int, default=256)
    args = p.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    seq, vocab = args.seq, 8192
    model = TinyLM(vocab=vocab, d=args.d_model, heads=max(1, args.d_model // 64),
                   layers=args.layers, seq=seq).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randint(0, vocab, (args.batch, seq), device=dev)
    y = torch.randint(0, vocab, (args.batch, seq), device=dev)
    start = time.monotonic()
    step = 0
    switched = False
    while time.monotonic() - start < args.seconds:
        if args.switch_after > 0 and args.sync_flag and not switched and \
                time.monotonic() - start >= args.switch_after:
            open(args.sync_flag, "w").close()
        slow = bool(args.sync_flag) and os.path.exists(args.sync_flag)
        if slow and not switched:
            switched = True
            print(f"MONITOR_SWITCH step={step} t={time.monotonic() - start:.1f}", flush=True)
        with torch.cuda.nvtx.range("train_step"):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(x)
                loss = torch.nn.functional.cross_entropy(logits.view(-1, vocab), y.view(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if slow:
                torch.cuda.synchronize()
                loss.item()
        step += 1
    torch.cuda.synchronize()
    print(f"MONITOR_DONE steps={step} loss={loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
