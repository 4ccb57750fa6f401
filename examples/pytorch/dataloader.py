#!/usr/bin/env python3
"""A DataLoader-bound training loop: CPU augmentation in the Dataset.

A small CNN classifier (bf16 autocast, channels_last) on 3×96×96 images that
the Dataset decodes and augments on the CPU per sample (random crop, flip,
colour jitter and normalisation in NumPy: a few milliseconds a sample).

  --variant slow   DataLoader(num_workers=0): the training process does the
                   augmentation itself, the GPU waits for every batch
  --variant fixed  DataLoader(num_workers=8, pin_memory=True,
                   persistent_workers=True, prefetch_factor=4) and
                   non_blocking copies: batches are ready when the GPU is
"""
import numpy as np
import torch

import common


class AugmentedImages(torch.utils.data.Dataset):
    def __init__(self, n, size=96):
        self.n, self.size = n, size
        rng = np.random.default_rng(0)
        self.raw = rng.integers(0, 255, size=(64, 3, 112, 112), dtype=np.uint8)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = self.raw[i % len(self.raw)].astype(np.float32) / 255.0
        y0, x0 = rng.integers(0, 112 - self.size, size=2)
        img = img[:, y0:y0 + self.size, x0:x0 + self.size]
        if rng.random() < 0.5:
            img = img[:, :, ::-1]
        jitter = rng.uniform(0.8, 1.2, size=(3, 1, 1)).astype(np.float32)
        img = np.clip(img * jitter, 0.0, 1.0)
        for _ in range(2):  # a blur-like smoothing pass: the expensive part
            img = 0.25 * (np.roll(img, 1, axis=1) + np.roll(img, -1, axis=1) +
                          np.roll(img, 1, axis=2) + np.roll(img, -1, axis=2))
        img = (img - 0.45) / 0.25
        return torch.from_numpy(np.ascontiguousarray(img)), int(i % 10)


def make_model():
    def block(cin, cout, stride):
        return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                                   torch.nn.BatchNorm2d(cout), torch.nn.ReLU(inplace=True))
    return torch.nn.Sequential(block(3, 64, 2), block(64, 128, 1), block(128, 256, 2),
                               block(256, 256, 1), block(256, 256, 2),
                               torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                               torch.nn.Linear(256, 10))


def main():
    args = common.parser(__doc__, ["slow", "fixed"]).parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    batch = 64
    steps = args.steps if args.steps is not None else 40
    warmup = args.warmup if args.warmup is not None else 8
    data = AugmentedImages((steps + warmup + 8) * batch)
    if args.variant == "slow":
        loader = torch.utils.data.DataLoader(data, batch_size=batch, shuffle=False, num_workers=0)
    else:
        loader = torch.utils.data.DataLoader(data, batch_size=batch, shuffle=False, num_workers=8,
                                             pin_memory=True, persistent_workers=True,
                                             prefetch_factor=4)
    model = make_model().to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    it = iter(loader)

    def step(i):
        x, y = next(it)
        x = x.to(dev, non_blocking=True).to(memory_format=torch.channels_last)
        y = y.to(dev, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    common.run_steps(step, args, default_steps=steps, default_warmup=warmup)


if __name__ == "__main__":
    main()
