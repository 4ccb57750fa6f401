#!/usr/bin/env python3
"""Batch-1 autoregressive decoding with a KV cache: tiny kernels.

A 6-layer decoder (d=512, 8 heads, max context 256) generating one token at
a time for one sequence, greedy, from a preallocated KV cache of static
shape (attention over the whole cache with a position mask, so the decode
step has the same shapes at every position). A step = one token.

  --variant eager   the decode step as written: ~20 kernels per layer, each
                    a few microseconds; the launches set the pace
  --variant graph   the same step captured once in a CUDA graph and replayed
                    per token (inputs copied into static buffers)
Both generate the same tokens (printed as a checksum).
"""
import torch

import common

D, HEADS, LAYERS, CTX, VOCAB = 512, 8, 6, 256, 16000


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, D)
        self.pos = torch.nn.Embedding(CTX, D)
        self.ln1 = torch.nn.ModuleList(torch.nn.LayerNorm(D) for _ in range(LAYERS))
        self.qkv = torch.nn.ModuleList(torch.nn.Linear(D, 3 * D) for _ in range(LAYERS))
        self.out = torch.nn.ModuleList(torch.nn.Linear(D, D) for _ in range(LAYERS))
        self.ln2 = torch.nn.ModuleList(torch.nn.LayerNorm(D) for _ in range(LAYERS))
        self.up = torch.nn.ModuleList(torch.nn.Linear(D, 4 * D) for _ in range(LAYERS))
        self.down = torch.nn.ModuleList(torch.nn.Linear(4 * D, D) for _ in range(LAYERS))
        self.ln = torch.nn.LayerNorm(D)
        self.head = torch.nn.Linear(D, VOCAB)

    def step(self, token, pos, k_cache, v_cache):
        """token: [1] int64, pos: [1] int64 (device); caches [L, H, CTX, D/H]."""
        hd = D // HEADS
        x = self.emb(token) + self.pos(pos)                       # [1, D]
        visible = (torch.arange(CTX, device=token.device) <= pos)  # [CTX]
        bias = torch.where(visible, 0.0, float("-inf")).to(x.dtype)
        for l in range(LAYERS):
            h = self.ln1[l](x)
            q, k, v = self.qkv[l](h).view(3, HEADS, hd).unbind(0)  # [H, hd] each
            k_cache[l].index_copy_(1, pos, k.unsqueeze(1))
            v_cache[l].index_copy_(1, pos, v.unsqueeze(1))
            att = (k_cache[l] @ q.unsqueeze(-1)).squeeze(-1) / hd ** 0.5 + bias  # [H, CTX]
            a = (att.softmax(-1).unsqueeze(1) @ v_cache[l]).reshape(1, D)
            x = x + self.out[l](a)
            x = x + self.down[l](torch.nn.functional.gelu(self.up[l](self.ln2[l](x))))
        return self.head(self.ln(x)).argmax(-1)                  # [1]


@torch.no_grad()
def main():
    args = common.parser(__doc__, ["eager", "graph"]).parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = Decoder().to(dev).to(torch.bfloat16).eval()
    k_cache = torch.zeros(LAYERS, HEADS, CTX, D // HEADS, device=dev, dtype=torch.bfloat16)
    v_cache = torch.zeros_like(k_cache)
    token = torch.zeros(1, dtype=torch.long, device=dev)
    pos = torch.zeros(1, dtype=torch.long, device=dev)
    out_tokens = []
    if args.variant == "eager":
        def decode(t):
            return model.step(token, pos, k_cache, v_cache)
    else:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                model.step(token, pos, k_cache, v_cache)
        torch.cuda.current_stream().wait_stream(side)
        k_cache.zero_()
        v_cache.zero_()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_next = model.step(token, pos, k_cache, v_cache)

        def decode(t):
            graph.replay()
            return static_next

    def step(i):
        t = i % CTX
        if t == 0:
            k_cache.zero_()
            v_cache.zero_()
            token.fill_(1)
        pos.fill_(t)
        nxt = decode(t)
        token.copy_(nxt)
        if i % 64 == 63:
            out_tokens.append(token.clone())

    common.run_steps(step, args, default_steps=512, default_warmup=64, name="decode_step")
    checksum = int(torch.cat(out_tokens).sum().item()) if out_tokens else 0
    print(f"tokens checksum={checksum}")


if __name__ == "__main__":
    main()
