"""The PyTorch peer of mlperf-run's training step on one GPU (scripts/device-check.sh).

A Llama 3.1-shaped model of --layers decoder layers with the sizes `mlperfc emit-model llama3
--set layers=N` declares (hidden 4096, 32 query and 8 KV heads, FFN 14336, vocabulary 128256,
RoPE theta 500000, untied output layer), trained the usual PyTorch way: fp32 master weights,
bf16 autocast, causal GQA through scaled_dot_product_attention, cross-entropy over the token
mean, gradient clipping at 1.0 and fused AdamW; one sequence of --seq tokens per step. Same
shapes, batch and optimizer as the plan; the weights are drawn from the same distributions, not
the same values (only the time is compared). Eager, or the step's forward and backward under
torch.compile (the compile is warm-up, not timed).

Prints one JSON line: {"mode", "layers", "seq", "tokens_per_s", "step_s", "steps"}.
"""

import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F


class Layer(torch.nn.Module):
    def __init__(self, hidden, heads, kv_heads, ffn, layers):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        std, scaled = 0.02, 0.02 / math.sqrt(2 * layers)

        def linear(rows, columns, s):
            return torch.nn.Parameter(torch.randn(rows, columns) * s)

        self.attention_norm = torch.nn.Parameter(torch.ones(hidden))
        self.wq = linear(heads * self.head_dim, hidden, std)
        self.wk = linear(kv_heads * self.head_dim, hidden, std)
        self.wv = linear(kv_heads * self.head_dim, hidden, std)
        self.wo = linear(hidden, heads * self.head_dim, scaled)
        self.mlp_norm = torch.nn.Parameter(torch.ones(hidden))
        self.gate = linear(ffn, hidden, std)
        self.up = linear(ffn, hidden, std)
        self.down = linear(hidden, ffn, scaled)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        h = F.rms_norm(x, (x.shape[-1],), self.attention_norm, 1e-5)
        q = F.linear(h, self.wq).view(b, s, self.heads, self.head_dim)
        k = F.linear(h, self.wk).view(b, s, self.kv_heads, self.head_dim)
        v = F.linear(h, self.wv).view(b, s, self.kv_heads, self.head_dim)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True, enable_gqa=True)
        x = x + F.linear(o.transpose(1, 2).reshape(b, s, -1), self.wo)
        h = F.rms_norm(x, (x.shape[-1],), self.mlp_norm, 1e-5)
        return x + F.linear(F.silu(F.linear(h, self.gate)) * F.linear(h, self.up), self.down)


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


class Llama(torch.nn.Module):
    def __init__(self, layers, hidden, heads, kv_heads, ffn, vocab, seq):
        super().__init__()
        self.embed = torch.nn.Parameter(torch.randn(vocab, hidden) * 0.02)
        self.layers = torch.nn.ModuleList(Layer(hidden, heads, kv_heads, ffn, layers)
                                          for _ in range(layers))
        self.norm = torch.nn.Parameter(torch.ones(hidden))
        self.head = torch.nn.Parameter(torch.randn(vocab, hidden) * 0.02)
        head_dim = hidden // heads
        frequencies = 500000.0 ** (-torch.arange(0, head_dim, 2).float() / head_dim)
        angles = torch.outer(torch.arange(seq).float(), frequencies)[None, :, None, :]
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, tokens, labels):
        x = F.embedding(tokens, self.embed)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin)
        x = F.rms_norm(x, (x.shape[-1],), self.norm, 1e-5)
        logits = F.linear(x, self.head)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--seq", type=int, default=8192)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--ffn", type=int, default=14336)
    parser.add_argument("--vocab", type=int, default=128256)
    parser.add_argument("--steps", type=int, default=8, help="timed steps (after two warm-ups)")
    parser.add_argument("--mode", choices=["eager", "compile"], default="eager")
    args = parser.parse_args()
    if args.layers < 1 or args.seq < 2 or args.steps < 1:
        parser.error("--layers, --steps must be positive and --seq at least 2")

    torch.manual_seed(7)
    device = torch.device("cuda")
    model = Llama(args.layers, args.hidden, args.heads, args.kv_heads, args.ffn, args.vocab,
                  args.seq).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), eps=1e-5,
                                  weight_decay=0.1, fused=True)
    tokens = torch.randint(0, args.vocab, (1, args.seq + 1), device=device)
    inputs, labels = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def loss_of(x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return model(x, y)

    forward = torch.compile(loss_of) if args.mode == "compile" else loss_of

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = forward(inputs, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss

    times = []
    for i in range(args.steps + 2):
        torch.cuda.synchronize()
        start = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        if i >= 2:
            times.append(time.perf_counter() - start)
    if not math.isfinite(loss.item()):
        raise SystemExit(f"torch_llama_step: loss {loss.item()} is not finite")
    seconds = statistics.median(times)
    print(json.dumps({"mode": args.mode, "layers": args.layers, "seq": args.seq,
                      "tokens_per_s": round(args.seq / seconds, 1), "step_s": round(seconds, 5),
                      "steps": args.steps, "loss": round(loss.item(), 4)}))


if __name__ == "__main__":
    main()
