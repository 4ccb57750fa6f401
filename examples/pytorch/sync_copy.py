#!/usr/bin/env python3
"""Per-step host synchronisation and pageable copies in a training loop.

An MLP regressor (4 × Linear 2048, bf16 autocast) trained on batches that
come from host memory (batch 2048 × 2048 fp32: 16 MiB a step).

  --variant slow   each batch is a pageable tensor copied with .cuda()
                   (synchronous: the host waits for the copy and everything
                   queued before it), and the loss is logged with .item()
                   every step (the host waits for the step to finish)
  --variant fixed  the batches sit in pinned memory and are copied with
                   non_blocking=True; the loss is accumulated on the GPU and
                   read once every 50 steps
"""
import torch

import common


def main():
    args = common.parser(__doc__, ["slow", "fixed"]).parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    d, batch = 2048, 2048
    model = torch.nn.Sequential(*[m for _ in range(4) for m in
                                  (torch.nn.Linear(d, d), torch.nn.ReLU())],
                                torch.nn.Linear(d, 1)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    host_x = [torch.randn(batch, d) for _ in range(4)]
    host_y = [torch.randn(batch, 1) for _ in range(4)]
    if args.variant == "fixed":
        host_x = [x.pin_memory() for x in host_x]
        host_y = [y.pin_memory() for y in host_y]
    running = torch.zeros((), device=dev)
    log = []

    def step(i):
        nonlocal running
        k = i % len(host_x)
        if args.variant == "slow":
            x, y = host_x[k].cuda(), host_y[k].cuda()
        else:
            x = host_x[k].to(dev, non_blocking=True)
            y = host_y[k].to(dev, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if args.variant == "slow":
            log.append(loss.item())
        else:
            running += loss.detach()
            if i % 50 == 49:
                log.append(running.item() / 50)
                running.zero_()

    common.run_steps(step, args, default_steps=100, default_warmup=20)


if __name__ == "__main__":
    main()
