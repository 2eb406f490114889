"""What the float64 JAX oracles share: their command line, AdamW trajectories as the MLPerf
references run them, and the comparison of a run's printed steps with one. Shared by the MoE, attention-variant and
GPT-OSS oracles (llama_oracle.py keeps its own, which also covers Adagrad)."""
import argparse
import os
import subprocess
import tempfile

import numpy as np

import jax
import jax.numpy as jnp

from llama_oracle import step_lines, write_megatron, write_safetensors


def start_oracle(prefix):
    """The command line every such oracle takes (--mlperfc PATH [--keep DIR]), with JAX in
    float64: returns the mlperfc path and the work directory (a fresh temporary one unless
    --keep names one)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--mlperfc", required=True)
    parser.add_argument("--keep", help="keep the work files in this directory")
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", True)
    workdir = args.keep or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(workdir, exist_ok=True)
    return args.mlperfc, workdir


def cosine_warmup_lr(step, base, end, warmup, total):
    """tg.lr_value's cosine_with_linear_warmup (NeMo's warmup then cosine annealing)."""
    if step <= warmup:
        return base * (step + 1) / (warmup + 1)
    if step > total:
        return end
    return end + (base - end) * 0.5 * (1 + np.cos(np.pi * (step - warmup) / (total - warmup)))


def adamw_trajectory(loss_fn, params, micro_batches, steps, learning_rate, betas=(0.9, 0.95),
                     eps=1e-5, weight_decay=0.1, clip=1.0, decays=lambda name, value: True):
    """Trains `params` (updated in place) for `steps` AdamW steps in float64: each step's
    gradient is the mean over `micro_batches(step)` (a list of (tokens, labels)) of
    jax.grad(loss_fn), clipped to global norm `clip` (coefficient clip / (norm + 1e-6)), then
    AdamW with bias correction and decoupled weight decay on the parameters `decays` names.
    Returns (loss, lr, grad_norm) per step, the loss the micro-batches' mean."""
    beta1, beta2 = betas
    grad_fn = jax.jit(jax.value_and_grad(loss_fn))
    m = {k: jnp.zeros_like(v) for k, v in params.items()}
    v = {k: jnp.zeros_like(x) for k, x in params.items()}
    history = []
    for step in range(steps):
        batches = micro_batches(step)
        total, grads = 0.0, {k: jnp.zeros_like(x) for k, x in params.items()}
        for tokens, labels in batches:
            loss, g = grad_fn(params, jnp.asarray(tokens), jnp.asarray(labels))
            total += float(loss)
            grads = {k: grads[k] + g[k] / len(batches) for k in grads}
        norm = float(jnp.sqrt(sum(jnp.sum(g * g) for g in grads.values())))
        coefficient = min(1.0, clip / (norm + 1e-6))
        lr = learning_rate(step)
        t = step + 1
        for k in params:
            g = grads[k] * coefficient
            m[k] = beta1 * m[k] + (1 - beta1) * g
            v[k] = beta2 * v[k] + (1 - beta2) * g * g
            update = (m[k] / (1 - beta1 ** t)) / (jnp.sqrt(v[k] / (1 - beta2 ** t)) + eps)
            decay = weight_decay if decays(k, params[k]) else 0.0
            params[k] = params[k] - lr * (update + decay * params[k])
        history.append((total / len(batches), lr, norm))
    return history


def trajectory_failures(name, got, reference, rtol):
    """The steps of `got` whose loss, lr or gradient norm differs from `reference` by more
    than `rtol` relative (and a missing or extra step), and the worst relative difference."""
    problems, worst = [], 0.0
    if len(got) != len(reference):
        problems.append(f"{name}: {len(got)} steps, expected {len(reference)}")
    for step, (got_row, want_row) in enumerate(zip(got, reference)):
        for what, a, b in zip(("loss", "lr", "grad_norm"), got_row, want_row):
            error = abs(a - b) / abs(b)
            worst = max(worst, error)
            if not error <= rtol:
                problems.append(f"{name} step {step} {what} {a} vs JAX {b} (rel {error:.1e})")
    return problems, worst


def stream_batches(stream, seq, steps, rows):
    """Tokens and next-token labels [steps, rows, seq] of consecutive seq + 1-token windows of
    `stream` overlapping by one token: Megatron GPT samples of a one-document dataset read in
    file order (`--data-order sequential`)."""
    count = steps * rows
    tokens = np.stack([stream[i * seq:(i + 1) * seq] for i in range(count)])
    labels = np.stack([stream[i * seq + 1:(i + 1) * seq + 1] for i in range(count)])
    return tokens.reshape(steps, rows, seq), labels.reshape(steps, rows, seq)


def train_on_plan(mlperfc, plan, stream, workdir, weights, steps, extra=(), launcher=(),
                  env=None, timeout=None):
    """Trains `plan` with mlperf-run for `steps` steps from `weights` on `stream` written as a
    Megatron dataset (read in order): returns the printed (loss, lr, grad_norm) per step and
    the completed process, whose exit status the caller judges (a run that evaluates and
    misses its target exits 1 after its steps)."""
    data = os.path.join(workdir, "train.data")
    if not os.path.exists(data + ".bin"):
        write_megatron(data, stream)
    mlperf_run = os.path.join(os.path.dirname(mlperfc), "mlperf-run")
    run = subprocess.run([*launcher, mlperf_run, plan, "--data", data, "--data-order",
                          "sequential", "--init-from", weights, "--max-steps", str(steps),
                          "--print-every", "1", *extra], capture_output=True, text=True,
                         env=env, timeout=timeout)
    return step_lines(run.stdout), run


def train_on_interpreter(mlperfc, model, workdir, tokens, labels, steps, seed=None, params=None):
    """Trains `model` with `mlperfc run-reference --train-steps` on the batches `tokens`,
    `labels` ([steps, global batch, seq]) from weights drawn with `seed` (saved) or read from
    `params`: returns the printed (loss, lr, grad_norm) per step and the initial weights' file."""
    batches = os.path.join(workdir, "train.batches.safetensors")
    write_safetensors(batches, {"tokens": tokens, "labels": labels})
    weights = params or os.path.join(workdir, "train.weights.safetensors")
    source = ["--params", params] if params else ["--seed", str(seed), "--save-params", weights]
    run = subprocess.run([mlperfc, "run-reference", model, *source, "--inputs", batches,
                          "--train-steps", str(steps)], check=True, capture_output=True, text=True)
    return step_lines(run.stdout), weights
