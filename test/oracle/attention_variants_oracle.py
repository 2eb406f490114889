"""Checks GPT-OSS-20B's attention variants against an independent JAX implementation.

The JAX model below is written from the reference's semantics (shared/reference/BENCHMARKS.md
section 2), not from mlperfc's code, and runs in float64:
  - sliding-window causal attention on even layers: query i sees keys j with
    i - WINDOW <= j <= i (Transformer Engine's window (WINDOW, 0)), full causal on odd ones;
  - QK RMSNorm over the head dim (eps 1e-6, its own weight for q and for k) before RoPE;
  - plain rotate-half RoPE (theta 150000, no scaling) over the whole head;
  - heads x head_dim != d_model (the query width is not the hidden size), GQA.

For a hand-written two-layer model (f32; attention blocks only, then the head and mean CE) it
has `mlperfc run-reference` compute the loss and every gradient on the unfused graph (the
interpreter runs tg.causal_mask with its window), compares them with JAX, then trains STEPS
AdamW steps on the interpreter and through compile -> plan -> mlperf-run (where
tg-fuse-attention has fused each layer into tg.attention with its window) and requires both
to agree to the bit and with JAX.

Usage: attention_variants_oracle.py --mlperfc build/bin/mlperfc [--keep DIR]
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_oracle import (compare, jax, jnp, read_safetensors,  # noqa: E402
                          write_safetensors)
from trajectory import (adamw_trajectory, start_oracle, stream_batches,  # noqa: E402
                        train_on_interpreter, train_on_plan, trajectory_failures)

SEQ, D, HEADS, KV, HEAD_DIM, VOCAB, WINDOW = 16, 24, 4, 2, 8, 64, 3
THETA, EPS = 150000.0, 1e-6
STEPS, LR = 6, 1e-2
BETA1, BETA2, ADAM_EPS, WEIGHT_DECAY, CLIP = 0.9, 0.95, 1e-5, 0.1, 1.0
TRAJECTORY_RTOL = 1e-5
Q, KVW = HEADS * HEAD_DIM, KV * HEAD_DIM


def layer(i, window):
    """Layer i in tg ops: pre-norm attention with QK norm, RoPE, a (windowed) causal mask."""
    mask = f"{{window = {window} : i64}} " if window is not None else ""
    t = f"1x{SEQ}"
    return f"""
    %n{i} = tg.param_ref @"layers.{i}.norm" : tensor<{D}xf32>
    %xn{i} = tg.rms_norm %h{i}, %n{i} {{epsilon = 1.0e-06}} : tensor<{t}x{D}xf32>, tensor<{D}xf32>
    %wq{i} = tg.param_ref @"layers.{i}.q" : tensor<{Q}x{D}xf32>
    %wk{i} = tg.param_ref @"layers.{i}.k" : tensor<{KVW}x{D}xf32>
    %wv{i} = tg.param_ref @"layers.{i}.v" : tensor<{KVW}x{D}xf32>
    %q{i} = tg.matmul %xn{i}, %wq{i} {{transpose_rhs}} : tensor<{t}x{D}xf32>, tensor<{Q}x{D}xf32> -> tensor<{t}x{Q}xf32>
    %k{i} = tg.matmul %xn{i}, %wk{i} {{transpose_rhs}} : tensor<{t}x{D}xf32>, tensor<{KVW}x{D}xf32> -> tensor<{t}x{KVW}xf32>
    %v{i} = tg.matmul %xn{i}, %wv{i} {{transpose_rhs}} : tensor<{t}x{D}xf32>, tensor<{KVW}x{D}xf32> -> tensor<{t}x{KVW}xf32>
    %q4{i} = tg.reshape %q{i} : tensor<{t}x{Q}xf32> -> tensor<{t}x{HEADS}x{HEAD_DIM}xf32>
    %k4{i} = tg.reshape %k{i} : tensor<{t}x{KVW}xf32> -> tensor<{t}x{KV}x{HEAD_DIM}xf32>
    %v4{i} = tg.reshape %v{i} : tensor<{t}x{KVW}xf32> -> tensor<{t}x{KV}x{HEAD_DIM}xf32>
    %qn{i} = tg.param_ref @"layers.{i}.q_norm" : tensor<{HEAD_DIM}xf32>
    %kn{i} = tg.param_ref @"layers.{i}.k_norm" : tensor<{HEAD_DIM}xf32>
    %qq{i} = tg.rms_norm %q4{i}, %qn{i} {{epsilon = 1.0e-06}} : tensor<{t}x{HEADS}x{HEAD_DIM}xf32>, tensor<{HEAD_DIM}xf32>
    %kk{i} = tg.rms_norm %k4{i}, %kn{i} {{epsilon = 1.0e-06}} : tensor<{t}x{KV}x{HEAD_DIM}xf32>, tensor<{HEAD_DIM}xf32>
    %qr{i} = tg.rope %qq{i} {{theta = 150000.0}} : tensor<{t}x{HEADS}x{HEAD_DIM}xf32>
    %kr{i} = tg.rope %kk{i} {{theta = 150000.0}} : tensor<{t}x{KV}x{HEAD_DIM}xf32>
    %qh{i} = tg.transpose %qr{i} {{permutation = array<i64: 0, 2, 1, 3>}} : tensor<{t}x{HEADS}x{HEAD_DIM}xf32> -> tensor<1x{HEADS}x{SEQ}x{HEAD_DIM}xf32>
    %kh{i} = tg.transpose %kr{i} {{permutation = array<i64: 0, 2, 1, 3>}} : tensor<{t}x{KV}x{HEAD_DIM}xf32> -> tensor<1x{KV}x{SEQ}x{HEAD_DIM}xf32>
    %vh{i} = tg.transpose %v4{i} {{permutation = array<i64: 0, 2, 1, 3>}} : tensor<{t}x{KV}x{HEAD_DIM}xf32> -> tensor<1x{KV}x{SEQ}x{HEAD_DIM}xf32>
    %kg{i} = tg.repeat %kh{i} {{dim = 1, times = {HEADS // KV}}} : tensor<1x{KV}x{SEQ}x{HEAD_DIM}xf32> -> tensor<1x{HEADS}x{SEQ}x{HEAD_DIM}xf32>
    %vg{i} = tg.repeat %vh{i} {{dim = 1, times = {HEADS // KV}}} : tensor<1x{KV}x{SEQ}x{HEAD_DIM}xf32> -> tensor<1x{HEADS}x{SEQ}x{HEAD_DIM}xf32>
    %s{i} = tg.matmul %qh{i}, %kg{i} {{transpose_rhs}} : tensor<1x{HEADS}x{SEQ}x{HEAD_DIM}xf32>, tensor<1x{HEADS}x{SEQ}x{HEAD_DIM}xf32> -> tensor<1x{HEADS}x{SEQ}x{SEQ}xf32>
    %ss{i} = tg.scale %s{i} {{factor = {HEAD_DIM ** -0.5}}} : tensor<1x{HEADS}x{SEQ}x{SEQ}xf32>
    %m{i} = tg.causal_mask %ss{i} {mask}: tensor<1x{HEADS}x{SEQ}x{SEQ}xf32>
    %p{i} = tg.softmax %m{i} {{dim = 3}} : tensor<1x{HEADS}x{SEQ}x{SEQ}xf32>
    %c{i} = tg.matmul %p{i}, %vg{i} : tensor<1x{HEADS}x{SEQ}x{SEQ}xf32>, tensor<1x{HEADS}x{SEQ}x{HEAD_DIM}xf32> -> tensor<1x{HEADS}x{SEQ}x{HEAD_DIM}xf32>
    %ct{i} = tg.transpose %c{i} {{permutation = array<i64: 0, 2, 1, 3>}} : tensor<1x{HEADS}x{SEQ}x{HEAD_DIM}xf32> -> tensor<{t}x{HEADS}x{HEAD_DIM}xf32>
    %cf{i} = tg.reshape %ct{i} : tensor<{t}x{HEADS}x{HEAD_DIM}xf32> -> tensor<{t}x{Q}xf32>
    %wo{i} = tg.param_ref @"layers.{i}.o" : tensor<{D}x{Q}xf32>
    %a{i} = tg.matmul %cf{i}, %wo{i} {{transpose_rhs}} : tensor<{t}x{Q}xf32>, tensor<{D}x{Q}xf32> -> tensor<{t}x{D}xf32>
    %h{i + 1} = tg.add %h{i}, %a{i} : tensor<{t}x{D}xf32>"""


def params_text(i):
    return f"""
  tg.param @"layers.{i}.norm" : tensor<{D}xf32> {{init = "ones"}}
  tg.param @"layers.{i}.q" : tensor<{Q}x{D}xf32> {{init = "normal", std = 0.3}}
  tg.param @"layers.{i}.k" : tensor<{KVW}x{D}xf32> {{init = "normal", std = 0.3}}
  tg.param @"layers.{i}.v" : tensor<{KVW}x{D}xf32> {{init = "normal", std = 0.3}}
  tg.param @"layers.{i}.q_norm" : tensor<{HEAD_DIM}xf32> {{init = "normal", std = 0.5}}
  tg.param @"layers.{i}.k_norm" : tensor<{HEAD_DIM}xf32> {{init = "normal", std = 0.5}}
  tg.param @"layers.{i}.o" : tensor<{D}x{Q}xf32> {{init = "normal", std = 0.3}}"""


MODEL = f"""
tg.model @attention_variants {{
  tg.benchmark {{name = "gpt_oss_20b", eval_every_samples = 64, eval_samples = 16,
                target_metric = "log_perplexity", target_value = 3.34}}
  tg.batch {{global_batch_size = 1, micro_batch_size = 1, seq_len = {SEQ}}}
  tg.optimizer {{name = "adamw", beta1 = {BETA1}, beta2 = {BETA2}, epsilon = 1.0e-05,
                weight_decay = {WEIGHT_DECAY}, weight_decay_params = "all", clip_grad_norm = 1.0}}
  tg.lr_schedule {{kind = "cosine_with_linear_warmup", base_lr = {LR}, end_lr = {LR},
                  warmup_steps = 0, decay_steps = {STEPS}, max_steps = {STEPS}}}
  tg.param @"embed" : tensor<{VOCAB}x{D}xf32> {{init = "normal", std = 1.0}}{params_text(0)}{params_text(1)}
  tg.param @"head" : tensor<{VOCAB}x{D}xf32> {{init = "normal", std = 0.3}}
  func.func @forward(%tokens: tensor<1x{SEQ}xi32>, %labels: tensor<1x{SEQ}xi32>) -> tensor<f32> {{
    %embed = tg.param_ref @"embed" : tensor<{VOCAB}x{D}xf32>
    %h0 = tg.embedding %embed, %tokens : tensor<{VOCAB}x{D}xf32>, tensor<1x{SEQ}xi32> -> tensor<1x{SEQ}x{D}xf32>{layer(0, WINDOW)}{layer(1, None)}
    %head = tg.param_ref @"head" : tensor<{VOCAB}x{D}xf32>
    %out = tg.matmul %h2, %head {{transpose_rhs}} : tensor<1x{SEQ}x{D}xf32>, tensor<{VOCAB}x{D}xf32> -> tensor<1x{SEQ}x{VOCAB}xf32>
    %loss = tg.cross_entropy %out, %labels : tensor<1x{SEQ}x{VOCAB}xf32>, tensor<1x{SEQ}xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }}
}}
"""


def rms(x, w):
    return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS) * w


def rope(x):
    """Rotate-half RoPE over the whole head, position = token index. x: [S, H, Dh]."""
    half = HEAD_DIM // 2
    inv = 1.0 / THETA ** (np.arange(half) * 2.0 / HEAD_DIM)
    angles = np.arange(SEQ)[:, None] * inv[None, :]                  # [S, Dh/2]
    cos = jnp.asarray(np.concatenate([np.cos(angles)] * 2, -1))[:, None, :]
    sin = jnp.asarray(np.concatenate([np.sin(angles)] * 2, -1))[:, None, :]
    rotated = jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


def attention_layer(p, i, h, window):
    x = rms(h, p[f"layers.{i}.norm"])
    q = (x @ p[f"layers.{i}.q"].T).reshape(SEQ, HEADS, HEAD_DIM)
    k = (x @ p[f"layers.{i}.k"].T).reshape(SEQ, KV, HEAD_DIM)
    v = (x @ p[f"layers.{i}.v"].T).reshape(SEQ, KV, HEAD_DIM)
    q = rope(rms(q, p[f"layers.{i}.q_norm"]))
    k = rope(rms(k, p[f"layers.{i}.k_norm"]))
    k = jnp.repeat(k, HEADS // KV, axis=1)
    v = jnp.repeat(v, HEADS // KV, axis=1)
    scores = jnp.einsum("qhd,khd->hqk", q, k) / np.sqrt(HEAD_DIM)
    qi, kj = np.arange(SEQ)[:, None], np.arange(SEQ)[None, :]
    allowed = kj <= qi
    if window is not None:
        allowed = allowed & (kj >= qi - window)
    scores = jnp.where(allowed[None], scores, -jnp.inf)
    context = jnp.einsum("hqk,khd->qhd", jax.nn.softmax(scores, axis=-1), v)
    return h + context.reshape(SEQ, Q) @ p[f"layers.{i}.o"].T


def loss_fn(p, tokens, labels):
    h = p["embed"][tokens[0]]
    h = attention_layer(p, 0, h, WINDOW)
    h = attention_layer(p, 1, h, None)
    log_probs = jax.nn.log_softmax(h @ p["head"].T, axis=-1)
    return -jnp.mean(jnp.take_along_axis(log_probs, labels[0][:, None], axis=-1))


def main():
    mlperfc, workdir = start_oracle("attention-variants-")
    model = os.path.join(workdir, "attention_variants.mlir")
    with open(model, "w") as f:
        f.write(MODEL)
    rng = np.random.default_rng(13)
    stream = rng.integers(0, VOCAB, size=STEPS * SEQ + 1).astype(np.int64)
    tokens, labels = stream_batches(stream, SEQ, STEPS, 1)

    # 1. Loss and gradients of the first micro-batch on the unfused graph.
    batch = os.path.join(workdir, "batch.safetensors")
    write_safetensors(batch, {"tokens": tokens[0], "labels": labels[0]})
    weights = os.path.join(workdir, "weights.safetensors")
    out = os.path.join(workdir, "out.safetensors")
    subprocess.run([mlperfc, "run-reference", model, "--seed", "9", "--save-params", weights,
                    "--inputs", batch, "--function", "forward_backward", "-o", out],
                   check=True, capture_output=True)
    params = {k: jnp.asarray(v, dtype=jnp.float64) for k, v in read_safetensors(weights).items()}
    loss, grads = jax.value_and_grad(loss_fn)(params, jnp.asarray(tokens[0]),
                                              jnp.asarray(labels[0]))
    ok = compare("sliding window + QK norm", read_safetensors(out), float(loss), grads)

    # The window must matter: the same model without it gives another loss.
    full = MODEL.replace(f"{{window = {WINDOW} : i64}} ", "")
    assert full != MODEL
    unwindowed = os.path.join(workdir, "unwindowed.mlir")
    with open(unwindowed, "w") as f:
        f.write(full)
    run = subprocess.run([mlperfc, "run-reference", unwindowed, "--params", weights,
                          "--inputs", batch, "--function", "forward"],
                         check=True, capture_output=True, text=True)
    unwindowed_loss = float(run.stdout.split()[-1])
    windowed_loss = float(read_safetensors(out)["loss"])
    print(f"without the window the loss is {unwindowed_loss:.6f}, with it {windowed_loss:.6f}")
    if abs(unwindowed_loss - windowed_loss) < 1e-3:
        print("the window changed nothing")
        ok = False

    # 2. Training on the interpreter and on the plan (fused attention with the window).
    ours, _ = train_on_interpreter(mlperfc, model, workdir, tokens, labels, STEPS, params=weights)
    plan = os.path.join(workdir, "plan.pb")
    subprocess.run([mlperfc, "compile", model, "--precision", "fp32", "-o", plan,
                    "--dump-ir", os.path.join(workdir, "ir")], check=True, capture_output=True)
    fused = subprocess.run([mlperfc, "show", plan, "--commands"], check=True,
                           capture_output=True, text=True).stdout
    windows = fused.count("window")
    if "attention" not in fused or windows == 0:
        print("the plan has no fused attention with a window")
        ok = False
    planned, _ = train_on_plan(mlperfc, plan, stream, workdir, weights, STEPS)

    reference = adamw_trajectory(loss_fn, params, lambda step: [(tokens[step], labels[step])],
                                 STEPS, lambda step: LR, betas=(BETA1, BETA2), eps=ADAM_EPS,
                                 weight_decay=WEIGHT_DECAY, clip=CLIP)
    failures, worst = trajectory_failures("run-reference", ours, reference, TRAJECTORY_RTOL)
    if planned != ours:
        failures.append(f"mlperf-run on the plan {planned} differs from run-reference {ours}")
    print(f"training: {STEPS} steps, loss {ours[0][0]:.4f} -> {ours[-1][0]:.4f} (JAX f64 "
          f"{reference[0][0]:.4f} -> {reference[-1][0]:.4f}), worst rel diff {worst:.1e}; "
          f"the plan's fused attention ({windows} commands with a window) bit-identical to the "
          f"interpreter: {planned == ours}: {'ok' if not failures else 'MISMATCH'}")
    for failure in failures[:10]:
        print("  " + failure)
    ok = ok and not failures
    print("attention variants oracle: " + ("ok" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
