#!/usr/bin/env python3
"""GPU memory defects of a training loop: a leak across steps, and
allocation churn from emptying the allocator's cache every step.

An MLP classifier (2048 → 4096 → 4096 → 1000 classes, batch 4096, bf16
autocast, fused AdamW) trained on random batches already on the GPU. The
loop also computes the training accuracy.

  --variant leak         keeps every step's logits on the GPU for the accuracy
                         at the end (all_logits.append(logits.detach())): 8 MiB
                         of device memory more per step, never released
  --variant fixed        counts correct predictions on the GPU as it goes and
                         reads the count once at the end
  --variant empty_cache  as fixed, but calls torch.cuda.empty_cache() after
                         every step ("to save memory"): the caching allocator
                         returns its blocks with cudaFree (which synchronizes
                         the device) and takes them back with cudaMalloc in the
                         next step

Besides the step times, prints the allocator's peak (common.py:
SIGHTLINE_MEMORY max_reserved_bytes=...), which sightline's peak must match.
"""
import torch

import common


def main():
    args = common.parser(__doc__, ["leak", "fixed", "empty_cache"]).parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    d_in, hidden, classes, batch = 2048, 4096, 1000, 4096
    model = torch.nn.Sequential(torch.nn.Linear(d_in, hidden), torch.nn.GELU(),
                                torch.nn.Linear(hidden, hidden), torch.nn.GELU(),
                                torch.nn.Linear(hidden, classes)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    xs = [torch.randn(batch, d_in, device=dev) for _ in range(4)]
    ys = [torch.randint(0, classes, (batch,), device=dev) for _ in range(4)]
    all_logits, all_labels = [], []
    correct = torch.zeros((), dtype=torch.int64, device=dev)

    def step(i):
        x, y = xs[i % 4], ys[i % 4]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits.float(), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if args.variant == "leak":
            all_logits.append(logits.detach())
            all_labels.append(y)
        else:
            correct.add_((logits.detach().argmax(1) == y).sum())
        if args.variant == "empty_cache":
            torch.cuda.empty_cache()

    ms = common.run_steps(step, args, default_steps=60, default_warmup=10)
    if args.variant == "leak":
        acc = (torch.cat(all_logits).argmax(1) == torch.cat(all_labels)).sum().item()
    else:
        acc = correct.item()
    print(f"accuracy_count={acc} steps={len(ms)}", flush=True)


if __name__ == "__main__":
    main()
