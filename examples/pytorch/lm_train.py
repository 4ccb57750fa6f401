#!/usr/bin/env python3
"""Small-batch transformer language-model training: launch-bound when eager.

A 4-layer pre-norm transformer LM (d=256, 4 heads, seq 64, batch 4, vocab
8192), bf16 autocast, fused AdamW. At this size every kernel is a few
microseconds and the step is made of ~hundreds of them: the host's launch
path, not the GPU, sets the pace.

  --variant eager   the step as written: forward, backward, optimizer
  --variant graph   the same step captured once into a CUDA graph
                    (torch.cuda.graph) and replayed: one launch per step
"""
import torch

import common


class Block(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = torch.nn.LayerNorm(d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                       torch.nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


class TinyLM(torch.nn.Module):
    def __init__(self, vocab=8192, d=256, heads=4, layers=4, seq=64):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.zeros(seq, d))
        self.blocks = torch.nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, tokens):
        x = self.emb(tokens) + self.pos
        for b in self.blocks:
            x = b(x, self.mask)
        return self.head(self.ln(x))


def main():
    args = common.parser(__doc__, ["eager", "graph"]).parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    vocab, seq, batch = 8192, 64, 4
    model = TinyLM(vocab=vocab, seq=seq).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True,
                            capturable=args.variant == "graph")
    data = torch.randint(0, vocab, (16, batch, seq + 1), device=dev)
    loss_fn = torch.nn.CrossEntropyLoss()

    def fwd_bwd_opt(tokens):
        with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
            logits = model(tokens[:, :-1])
            loss = loss_fn(logits.reshape(-1, vocab).float(), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
        return loss.detach()

    if args.variant == "eager":
        def step(i):
            fwd_bwd_opt(data[i % len(data)])
    else:
        static_tokens = data[0].clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # warm up on a side stream before capture
                fwd_bwd_opt(static_tokens)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_loss = fwd_bwd_opt(static_tokens)

        def step(i):
            static_tokens.copy_(data[i % len(data)])
            graph.replay()
    common.run_steps(step, args, default_steps=200, default_warmup=30)


if __name__ == "__main__":
    main()
