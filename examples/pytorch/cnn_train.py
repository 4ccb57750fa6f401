#!/usr/bin/env python3
"""A CNN training step with the tensor cores idle: fp32 without TF32.

A ResNet-style network (stem + 4 stages of two residual blocks, 64..512
channels) on 128×128 images, batch 64, SGD with momentum.

  --variant slow   fp32, TF32 disabled (torch.backends.cuda.matmul.allow_tf32
                   = False, cudnn.allow_tf32 = False), NCHW: convolutions and
                   GEMMs run on the FP32 pipes, the tensor cores idle
  --variant fixed  bf16 autocast and channels_last: cuDNN picks tensor-core
                   convolution kernels
"""
import torch

import common


class Residual(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = torch.nn.BatchNorm2d(cout)
        self.c2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = torch.nn.BatchNorm2d(cout)
        self.skip = (torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                                         torch.nn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else torch.nn.Identity())

    def forward(self, x):
        h = torch.relu(self.b1(self.c1(x)))
        return torch.relu(self.b2(self.c2(h)) + self.skip(x))


def make_model():
    layers = [torch.nn.Conv2d(3, 64, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(64),
              torch.nn.ReLU()]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Residual(cin, cout, stride), Residual(cout, cout, 1)]
        cin = cout
    layers += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(512, 100)]
    return torch.nn.Sequential(*layers)


def main():
    args = common.parser(__doc__, ["slow", "fixed"]).parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    slow = args.variant == "slow"
    torch.backends.cuda.matmul.allow_tf32 = not slow
    torch.backends.cudnn.allow_tf32 = not slow
    torch.backends.cudnn.benchmark = True
    fmt = torch.contiguous_format if slow else torch.channels_last
    model = make_model().to(dev, memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    xs = [torch.randn(64, 3, 128, 128, device=dev).to(memory_format=fmt) for _ in range(4)]
    ys = [torch.randint(0, 100, (64,), device=dev) for _ in range(4)]

    def step(i):
        x, y = xs[i % 4], ys[i % 4]
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=not slow):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    common.run_steps(step, args, default_steps=40, default_warmup=10)


if __name__ == "__main__":
    main()
