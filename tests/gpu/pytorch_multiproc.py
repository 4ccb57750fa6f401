"""Multi-process PyTorch programs for tests/gpu/multiprocess.sh.

  python3 pytorch_multiproc.py compile     torch.compile (Inductor's compile
                                           workers are separate processes)
  python3 pytorch_multiproc.py dataloader  DataLoader with 2 forked workers
                                           and pin_memory
  python3 pytorch_multiproc.py pool        multiprocessing Pool (spawn) whose
                                           workers use the GPU too

Prints "SIGHTLINE_PY pid=P steps=S" (the training process) and, for pool,
"SIGHTLINE_PY_WORKER pid=P" per worker that ran GPU work.
"""
import os
import sys

import torch


def train_steps(model, steps, make_batch):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        x, y = make_batch()
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()


def worker(i):
    x = torch.randn(256, 256, device="cuda")
    for _ in range(5):
        x = x @ x
        x = x / x.norm()
    torch.cuda.synchronize()
    return os.getpid()


class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.randn(64), torch.randn(8)


def main():
    mode = sys.argv[1]
    steps = 20
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 8)).cuda()
    if mode == "compile":
        cmodel = torch.compile(model)
        train_steps(cmodel, steps,
                    lambda: (torch.randn(32, 64, device="cuda"), torch.randn(32, 8, device="cuda")))
    elif mode == "dataloader":
        loader = torch.utils.data.DataLoader(Data(), batch_size=8, num_workers=2,
                                             pin_memory=True)
        it = iter(loader)
        batches = [next(it) for _ in range(8)]
        steps = len(batches)
        k = iter(range(steps))

        def make_batch():
            x, y = batches[next(k)]
            return x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        train_steps(model, steps, make_batch)
    elif mode == "pool":
        import multiprocessing as mp
        ctx = mp.get_context("spawn")
        with ctx.Pool(2) as pool:
            pids = sorted(set(pool.map(worker, range(4))))
        train_steps(model, steps,
                    lambda: (torch.randn(32, 64, device="cuda"), torch.randn(32, 8, device="cuda")))
        for p in pids:
            print(f"SIGHTLINE_PY_WORKER pid={p}")
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(f"SIGHTLINE_PY pid={os.getpid()} steps={steps}", flush=True)


if __name__ == "__main__":
    main()
