"""Checks the gpt_oss_20b declaration's training against an independent JAX implementation.

The JAX model below is written from the reference's semantics (shared/reference/BENCHMARKS.md
section 2), not from mlperfc's code, and runs in float64: pre-norm layers (RMSNorm eps 1e-6);
attention with RMSNorm on each q and k head before plain rotate-half RoPE (theta 150000),
heads x head_dim != d_model, GQA, a sliding window (query i sees keys i - W .. i) on even
layers and full causal attention on odd ones; a dropless mixture of SwiGLU experts computed
densely (every expert on every token, each token's top-k picked: top-k on the raw router
logits, softmax over the k, the probabilities applied before fc2); untied head; cross-entropy
averaged over the positions whose input token is not end-of-document (Megatron's
eod_mask_loss), per micro-batch, then over micro-batches; AdamW with decoupled weight decay on
matrices only, global-norm clipping, linear warmup then cosine.

For the tiny preset (`emit-model gpt-oss --preset gpt_oss_20b_tiny`, f32, a larger init and
learning rate so that routing is decisive and the model moves in STEPS steps) it trains STEPS
steps with `mlperfc run-reference` and through compile -> plan -> mlperf-run (one Megatron
dataset whose stream contains end-of-document tokens), which must agree to the bit, and
requires loss, lr and gradient norm within TRAJECTORY_RTOL of JAX at every step; the plan's
evaluation after the last step must give the reference's token-weighted evaluation loss (the
mean over every counted position of the evaluation sequences, not the mean of micro-batch
means). Then the same steps with the experts tensor-parallel (tp=2 under mpirun), whose
checkpoint, reassembled, must hold JAX's final parameters.

Usage: gpt_oss_oracle.py --mlperfc build/bin/mlperfc [--keep DIR]
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_oracle import jax, jnp, mpirun_env, read_safetensors, reassemble  # noqa: E402
from trajectory import (adamw_trajectory, cosine_warmup_lr, start_oracle,  # noqa: E402
                        stream_batches, train_on_interpreter, train_on_plan,
                        trajectory_failures)

STEPS = 20
TRAJECTORY_RTOL = 1e-5
# The tiny preset's sizes (compiler/Models/Llama.cpp, gptOss20bTiny).
LAYERS, D, HEADS, KV, HEAD_DIM, FFN, EXPERTS, TOP_K = 2, 64, 4, 2, 8, 32, 8, 2
VOCAB, SEQ, WINDOW, EOD, GBS, MICRO = 256, 32, 8, 255, 16, 2
THETA, EPS = 150000.0, 1e-6
EVAL_SAMPLES = 8
TRAIN = dict(lr=3e-3, end_lr=3e-4, warmup_steps=2, max_steps=STEPS, decay_steps=STEPS - 2,
             init_std=0.2, eval_every=STEPS * 16, eval_samples=EVAL_SAMPLES)
EVAL_RTOL = 1e-5
# Final parameters after STEPS f32 steps against float64, of each tensor's largest magnitude.
PARAM_RTOL = 1e-4
BETA1, BETA2, ADAM_EPS, WEIGHT_DECAY, CLIP = 0.9, 0.95, 1e-5, 0.1, 1.0


def rms(x, w):
    return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS) * w


def rope(x):
    """Rotate-half RoPE over the whole head, position = token index. x: [B, S, H, Dh]."""
    half = HEAD_DIM // 2
    inv = 1.0 / THETA ** (np.arange(half) * 2.0 / HEAD_DIM)
    angles = np.arange(SEQ)[:, None] * inv[None, :]
    cos = jnp.asarray(np.concatenate([np.cos(angles)] * 2, -1))[None, :, None, :]
    sin = jnp.asarray(np.concatenate([np.sin(angles)] * 2, -1))[None, :, None, :]
    return x * cos + jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1) * sin


def attention(p, i, x):
    b = x.shape[0]
    pre = f"model.layers.{i}.self_attn."
    q = (x @ p[pre + "q_proj.weight"].T).reshape(b, SEQ, HEADS, HEAD_DIM)
    k = (x @ p[pre + "k_proj.weight"].T).reshape(b, SEQ, KV, HEAD_DIM)
    v = (x @ p[pre + "v_proj.weight"].T).reshape(b, SEQ, KV, HEAD_DIM)
    q = rope(rms(q, p[pre + "q_norm.weight"]))
    k = jnp.repeat(rope(rms(k, p[pre + "k_norm.weight"])), HEADS // KV, axis=2)
    v = jnp.repeat(v, HEADS // KV, axis=2)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(HEAD_DIM)
    qi, kj = np.arange(SEQ)[:, None], np.arange(SEQ)[None, :]
    allowed = (kj <= qi) & ((kj >= qi - WINDOW) if i % 2 == 0 else True)
    scores = jnp.where(allowed, scores, -jnp.inf)
    context = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)
    return context.reshape(b, SEQ, HEADS * HEAD_DIM) @ p[pre + "o_proj.weight"].T


def moe(p, i, x):
    pre = f"model.layers.{i}.mlp."
    logits = x @ p[pre + "router.weight"].T                            # [B, S, E]
    top, chosen = jax.lax.top_k(logits, TOP_K)
    probs = jax.nn.softmax(top, axis=-1)
    fc1 = jnp.einsum("bsd,efd->bsef", x, p[pre + "experts.fc1.weight"])
    act = jax.nn.silu(fc1[..., :FFN]) * fc1[..., FFN:]                 # every expert
    picked = jnp.take_along_axis(act, chosen[..., None], axis=2)       # [B, S, k, F]
    fc2 = p[pre + "experts.fc2.weight"][chosen]                        # [B, S, k, D, F]
    return jnp.einsum("bskf,bskdf->bsd", picked * probs[..., None], fc2)


def loss_fn(p, tokens, labels):
    h = p["model.embed_tokens.weight"][tokens]
    for i in range(LAYERS):
        h = h + attention(p, i, rms(h, p[f"model.layers.{i}.input_layernorm.weight"]))
        h = h + moe(p, i, rms(h, p[f"model.layers.{i}.post_attention_layernorm.weight"]))
    logits = rms(h, p["model.norm.weight"]) @ p["lm_head.weight"].T
    nll = -jnp.take_along_axis(jax.nn.log_softmax(logits, -1), labels[..., None], -1)[..., 0]
    mask = (tokens != EOD).astype(nll.dtype)                           # eod_mask_loss
    return jnp.sum(nll * mask) / jnp.sum(mask)


def learning_rate(step):
    return cosine_warmup_lr(step, TRAIN["lr"], TRAIN["end_lr"], TRAIN["warmup_steps"],
                            TRAIN["max_steps"])


def main():
    mlperfc, workdir = start_oracle("gpt-oss-oracle-")

    model = os.path.join(workdir, "gpt_oss_tiny.mlir")
    sets = "dtype=f32," + ",".join(f"{k}={v}" for k, v in TRAIN.items())
    subprocess.run([mlperfc, "emit-model", "gpt-oss", "--preset", "gpt_oss_20b_tiny", "--set",
                    sets, "-o", model], check=True, capture_output=True)
    # One document stream: counting runs so there is something to learn, an end-of-document
    # token every few tokens (so that masked positions fall inside every micro-batch).
    rng = np.random.default_rng(21)
    windows = STEPS * GBS
    start = rng.integers(0, VOCAB - 1, size=(windows, 1))
    stride = rng.integers(1, 4, size=(windows, 1))
    counting = (start + stride * np.arange(SEQ)[None, :]) % (VOCAB - 1)
    stream = np.append(counting.reshape(-1), 0).astype(np.int64)
    stream[rng.random(stream.size) < 0.06] = EOD
    tokens, labels = stream_batches(stream, SEQ, STEPS, GBS)
    masked = float(np.mean(tokens == EOD))

    ours, weights = train_on_interpreter(mlperfc, model, workdir, tokens, labels, STEPS, seed=4)
    plan = os.path.join(workdir, "plan.pb")
    subprocess.run([mlperfc, "compile", model, "-o", plan], check=True, capture_output=True)
    # The plan also evaluates once, after the last step, on the first EVAL_SAMPLES sequences.
    data = os.path.join(workdir, "train.data")
    planned, run = train_on_plan(mlperfc, plan, stream, workdir, weights, STEPS,
                                 extra=("--eval-data", data))
    evals = [float(line.split("eval_loss")[1].split()[0]) for line in run.stdout.splitlines()
             if line.startswith("eval step")]
    tp_plan = os.path.join(workdir, "tp2.pb")
    subprocess.run([mlperfc, "compile", model, "--cluster", "1x2", "--parallel", "tp=2", "-o",
                    tp_plan], check=True, capture_output=True)
    tp_checkpoint = os.path.join(workdir, "tp2.final.safetensors")
    tensor_parallel, run = train_on_plan(mlperfc, tp_plan, stream, workdir, weights, STEPS,
                                         extra=("--save", tp_checkpoint),
                                         launcher=("mpirun", "--oversubscribe", "-np", "2"),
                                         env=mpirun_env(), timeout=280)

    params = {k: jnp.asarray(v, dtype=jnp.float64) for k, v in read_safetensors(weights).items()}

    def micro_batches(step):
        return [(tokens[step, a:a + MICRO], labels[step, a:a + MICRO])
                for a in range(0, GBS, MICRO)]

    reference = adamw_trajectory(loss_fn, params, micro_batches, STEPS, learning_rate,
                                 betas=(BETA1, BETA2), eps=ADAM_EPS, weight_decay=WEIGHT_DECAY,
                                 clip=CLIP, decays=lambda name, value: value.ndim >= 2)
    failures, worst = trajectory_failures("run-reference", ours, reference, TRAJECTORY_RTOL)
    if planned != ours:
        failures.append(f"mlperf-run on the plan {planned[:2]}... differs from run-reference "
                        f"{ours[:2]}...")
    # The reference's evaluation loss: the token-weighted mean over every counted position of
    # the evaluation sequences, with the trained parameters.
    eval_tokens = np.stack([stream[i * SEQ:(i + 1) * SEQ] for i in range(EVAL_SAMPLES)])
    eval_labels = np.stack([stream[i * SEQ + 1:(i + 1) * SEQ + 1] for i in range(EVAL_SAMPLES)])
    nll_sum, counted, means = 0.0, 0.0, []
    for a in range(0, EVAL_SAMPLES, MICRO):
        loss = float(loss_fn(params, jnp.asarray(eval_tokens[a:a + MICRO]),
                             jnp.asarray(eval_labels[a:a + MICRO])))
        count = float(np.sum(eval_tokens[a:a + MICRO] != EOD))
        nll_sum, counted = nll_sum + loss * count, counted + count
        means.append(loss)
    eval_reference = nll_sum / counted
    unweighted = float(np.mean(means))
    if len(evals) != 1 or not abs(evals[0] - eval_reference) <= EVAL_RTOL * eval_reference:
        failures.append(f"evaluation loss {evals} vs JAX's token-weighted {eval_reference:.6f}")
    tp_failures, tp_worst = trajectory_failures("tp=2", tensor_parallel, reference,
                                                TRAJECTORY_RTOL)
    param_worst = 0.0
    if run.returncode != 0:
        tp_failures.append(f"tp=2 under mpirun failed ({run.returncode}): "
                           f"{run.stderr.strip()[-500:]}")
    else:
        # The tensor-parallel checkpoint (expert weights split along their feature dims, fc1
        # in its [gate; up] blocks) reassembled against JAX's final parameters.
        stem = tp_checkpoint[:-len(".safetensors")]
        final = reassemble([f"{stem}.rank{r}-of-2.safetensors" for r in range(2)])
        for name, value in params.items():
            ref = np.asarray(value)
            got = final.get(name)
            error = (float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
                     if got is not None and got.shape == ref.shape else float("inf"))
            param_worst = max(param_worst, error)
            if not error <= PARAM_RTOL:
                tp_failures.append(f"tp=2 final {name}: {error:.1e} of its scale")
    failures += tp_failures
    print(f"gpt_oss_20b_tiny f32: {STEPS} steps, {masked:.1%} of positions end-of-document "
          f"(masked), loss {ours[0][0]:.4f} -> {ours[-1][0]:.4f} (JAX f64 {reference[0][0]:.4f} "
          f"-> {reference[-1][0]:.4f}); worst rel diff of loss, lr, grad_norm {worst:.1e} (one "
          f"rank), {tp_worst:.1e} (tp=2 under mpirun, its reassembled final parameters "
          f"{param_worst:.1e} of their scale); mlperf-run on the plan bit-identical to "
          f"run-reference: {planned == ours}; evaluation loss {evals} vs JAX token-weighted "
          f"{eval_reference:.6f} (the mean of micro-batch means would be {unweighted:.6f}): "
          f"{'ok' if not failures else 'MISMATCH'}")
    for failure in failures[:10]:
        print("  " + failure)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
