"""A small training loop whose forward runs from CUDA graphs that PyTorch
captures itself: torch.compile(mode="reduce-overhead") (CUDA graph trees:
warm-up runs, then a capture in global mode, then replays), with an eager
backward and optimizer step. Prints the final loss, which profiling must not
change (tests/gpu/metrics_graphs.sh).

  python3 metrics_graphs_app.py [STEPS]
"""
import sys

import torch


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 512)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(64, 512, device="cuda")
    y = torch.randn(64, 512, device="cuda")
    forward = torch.compile(model, mode="reduce-overhead")
    loss = None
    for _ in range(steps):
        torch.compiler.cudagraph_mark_step_begin()
        out = forward(x)
        loss = torch.nn.functional.mse_loss(out, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print(f"METRICS_GRAPHS loss={loss.item():.9e}")


if __name__ == "__main__":
    main()
