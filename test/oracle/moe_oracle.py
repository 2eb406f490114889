"""Checks tg's mixture-of-experts ops (routing, sort, permutes, grouped GEMMs) against JAX.

The JAX block below is written from the GPT-OSS-20B reference's MoE semantics
(shared/reference/BENCHMARKS.md section 2: router logits x·W_r in f32, top-k on the raw logits,
softmax over the k, dropless, SwiGLU experts with fc1 [2F, d] = [gate; up] and fc2 [d, F], the
probabilities applied to the activation before fc2, no biases), not from mlperfc's code, and
runs in float64. It computes every expert on every token densely and picks each token's k
outputs: no sort, no permutation, no grouped GEMM, so it shares nothing with the sorted,
grouped formulation mlperfc uses.

For a hand-written one-block model (embedding, RMSNorm, MoE, residual, head, mean CE; f32) it:
  1. has `mlperfc run-reference` draw the weights and compute the loss and every gradient
     (the router's included: the softmax over the k selected logits) on a micro-batch, and
     compares them with jax.value_and_grad of the dense block;
  2. checks routings that stress the sort: every token on the same two experts (six empty
     groups, whose fc1/fc2 gradients must be exactly 0) and ties between logits (two experts
     with the same router row: the lower expert index first, as jax.lax.top_k orders them);
  3. trains STEPS AdamW steps on one stream with `run-reference --train-steps` and with
     compile -> plan -> mlperf-run (Megatron dataset, sequential), which must agree to the
     bit, and against JAX in float64 (loss, lr, gradient norm to TRAJECTORY_RTOL); and the
     same steps with the experts tensor-parallel (tp=2 under mpirun: fc1 split by output
     features in its [gate; up] blocks, fc2 by input features, Megatron's expert TP).

Usage: moe_oracle.py --mlperfc build/bin/mlperfc [--keep DIR]
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_oracle import (compare, jax, jnp, mpirun_env, read_safetensors,  # noqa: E402
                          write_safetensors)
from trajectory import (adamw_trajectory, cosine_warmup_lr, start_oracle,  # noqa: E402
                        stream_batches, train_on_interpreter, train_on_plan,
                        trajectory_failures)

TOKENS, D, E, K, F, VOCAB = 16, 32, 8, 2, 24, 64
EPS = 1e-6
# The training check: AdamW as the model declares it, a schedule short enough to see.
STEPS, WARMUP, LR, END_LR = 8, 2, 1e-2, 1e-3
BETA1, BETA2, ADAM_EPS, WEIGHT_DECAY, CLIP = 0.9, 0.95, 1e-5, 0.1, 1.0
TRAJECTORY_RTOL = 1e-5

MODEL = f"""
tg.model @moe_block {{
  tg.benchmark {{name = "gpt_oss_20b", eval_every_samples = 64, eval_samples = 16,
                target_metric = "log_perplexity", target_value = 3.34}}
  tg.batch {{global_batch_size = 1, micro_batch_size = 1, seq_len = {TOKENS}}}
  tg.optimizer {{name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05,
                weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}}
  tg.lr_schedule {{kind = "cosine_with_linear_warmup", base_lr = {LR}, end_lr = {END_LR},
                  warmup_steps = {WARMUP}, decay_steps = {STEPS - WARMUP}, max_steps = {STEPS}}}
  tg.param @"embed" : tensor<{VOCAB}x{D}xf32> {{init = "normal", std = 1.0}}
  tg.param @"norm" : tensor<{D}xf32> {{init = "ones"}}
  tg.param @"router" : tensor<{E}x{D}xf32> {{init = "normal", std = 0.5}}
  tg.param @"fc1" : tensor<{E}x{2 * F}x{D}xf32> {{init = "normal", std = 0.2, shard = [[], ["tp"], []], shard_blocks = array<i64: {F}, {F}>}}
  tg.param @"fc2" : tensor<{E}x{D}x{F}xf32> {{init = "normal", std = 0.2, shard = [[], [], ["tp"]]}}
  tg.param @"head" : tensor<{VOCAB}x{D}xf32> {{init = "normal", std = 0.2}}
  func.func @forward(%tokens: tensor<1x{TOKENS}xi32>, %labels: tensor<1x{TOKENS}xi32>) -> tensor<f32> {{
    %embed = tg.param_ref @"embed" : tensor<{VOCAB}x{D}xf32>
    %h0 = tg.embedding %embed, %tokens : tensor<{VOCAB}x{D}xf32>, tensor<1x{TOKENS}xi32> -> tensor<1x{TOKENS}x{D}xf32>
    %norm = tg.param_ref @"norm" : tensor<{D}xf32>
    %xn = tg.rms_norm %h0, %norm {{epsilon = 1.0e-06}} : tensor<1x{TOKENS}x{D}xf32>, tensor<{D}xf32>
    %x = tg.reshape %xn : tensor<1x{TOKENS}x{D}xf32> -> tensor<{TOKENS}x{D}xf32>
    %router = tg.param_ref @"router" : tensor<{E}x{D}xf32>
    %logits = tg.matmul %x, %router {{transpose_rhs}} : tensor<{TOKENS}x{D}xf32>, tensor<{E}x{D}xf32> -> tensor<{TOKENS}x{E}xf32>
    %probs, %experts = tg.moe_route %logits {{top_k = {K} : i64}} : tensor<{TOKENS}x{E}xf32> -> tensor<{TOKENS}x{K}xf32>, tensor<{TOKENS}x{K}xi32>
    %order, %sizes = tg.moe_sort %experts : tensor<{TOKENS}x{K}xi32> -> tensor<{TOKENS * K}xi32>, tensor<{E}xi32>
    %rows = tg.moe_permute %x, %order : tensor<{TOKENS}x{D}xf32>, tensor<{TOKENS * K}xi32> -> tensor<{TOKENS * K}x{D}xf32>
    %fc1 = tg.param_ref @"fc1" : tensor<{E}x{2 * F}x{D}xf32>
    %h1 = tg.grouped_matmul %rows, %fc1, %sizes {{transpose_rhs}} : tensor<{TOKENS * K}x{D}xf32>, tensor<{E}x{2 * F}x{D}xf32>, tensor<{E}xi32> -> tensor<{TOKENS * K}x{2 * F}xf32>
    %gate, %up = tg.split %h1 {{dim = 1 : i64, sizes = array<i64: {F}, {F}>}} : tensor<{TOKENS * K}x{2 * F}xf32> -> tensor<{TOKENS * K}x{F}xf32>, tensor<{TOKENS * K}x{F}xf32>
    %act = tg.swiglu %gate, %up : tensor<{TOKENS * K}x{F}xf32>
    %pairs = tg.reshape %probs : tensor<{TOKENS}x{K}xf32> -> tensor<{TOKENS * K}x1xf32>
    %sorted = tg.moe_permute %pairs, %order : tensor<{TOKENS * K}x1xf32>, tensor<{TOKENS * K}xi32> -> tensor<{TOKENS * K}x1xf32>
    %p = tg.reshape %sorted : tensor<{TOKENS * K}x1xf32> -> tensor<{TOKENS * K}xf32>
    %weighted = tg.scale_rows %act, %p : tensor<{TOKENS * K}x{F}xf32>, tensor<{TOKENS * K}xf32>
    %fc2 = tg.param_ref @"fc2" : tensor<{E}x{D}x{F}xf32>
    %h2 = tg.grouped_matmul %weighted, %fc2, %sizes {{transpose_rhs}} : tensor<{TOKENS * K}x{F}xf32>, tensor<{E}x{D}x{F}xf32>, tensor<{E}xi32> -> tensor<{TOKENS * K}x{D}xf32>
    %y = tg.moe_unpermute %h2, %order : tensor<{TOKENS * K}x{D}xf32>, tensor<{TOKENS * K}xi32> -> tensor<{TOKENS}x{D}xf32>
    %y3 = tg.reshape %y : tensor<{TOKENS}x{D}xf32> -> tensor<1x{TOKENS}x{D}xf32>
    %h = tg.add %h0, %y3 : tensor<1x{TOKENS}x{D}xf32>
    %head = tg.param_ref @"head" : tensor<{VOCAB}x{D}xf32>
    %out = tg.matmul %h, %head {{transpose_rhs}} : tensor<1x{TOKENS}x{D}xf32>, tensor<{VOCAB}x{D}xf32> -> tensor<1x{TOKENS}x{VOCAB}xf32>
    %loss = tg.cross_entropy %out, %labels : tensor<1x{TOKENS}x{VOCAB}xf32>, tensor<1x{TOKENS}xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }}
}}
"""


def moe_loss(params, tokens, labels):
    """The block, densely: every expert on every token, then each token's k picked."""
    h0 = params["embed"][tokens[0]]                                  # [T, d]
    x = h0 / jnp.sqrt(jnp.mean(h0 * h0, axis=-1, keepdims=True) + EPS) * params["norm"]
    logits = x @ params["router"].T                                  # [T, E]
    top, chosen = jax.lax.top_k(logits, K)                           # raw logits, ties: low index
    probs = jax.nn.softmax(top, axis=-1)                             # over the k only
    fc1 = jnp.einsum("td,efd->tef", x, params["fc1"])                # [T, E, 2F]
    act = jax.nn.silu(fc1[..., :F]) * fc1[..., F:]                   # [T, E, F]
    picked = jnp.take_along_axis(act, chosen[..., None], axis=1)     # [T, k, F]
    weighted = picked * probs[..., None]                             # before fc2
    fc2 = params["fc2"][chosen]                                      # [T, k, d, F]
    y = jnp.einsum("tkf,tkdf->td", weighted, fc2)
    h = h0 + y
    log_probs = jax.nn.log_softmax(h @ params["head"].T, axis=-1)
    return -jnp.mean(jnp.take_along_axis(log_probs, labels[0][:, None], axis=-1))


def run_case(name, mlperfc, workdir, rng, edit=None):
    """One micro-batch through run-reference; `edit` changes the drawn weights first."""
    model = os.path.join(workdir, "moe_block.mlir")
    with open(model, "w") as f:
        f.write(MODEL)
    tokens = rng.integers(0, VOCAB, size=(1, TOKENS), dtype=np.int64)
    labels = rng.integers(0, VOCAB, size=(1, TOKENS), dtype=np.int64)
    batch = os.path.join(workdir, f"{name}.batch.safetensors")
    write_safetensors(batch, {"tokens": tokens, "labels": labels})
    weights = os.path.join(workdir, f"{name}.weights.safetensors")
    subprocess.run([mlperfc, "run-reference", model, "--seed", "7", "--save-params", weights,
                    "--inputs", batch, "--function", "forward"],
                   check=True, capture_output=True)
    params = read_safetensors(weights)
    if edit:
        params = {k: np.asarray(v, dtype=np.float32) for k, v in edit(params).items()}
        write_safetensors(weights, params)
    out = os.path.join(workdir, f"{name}.out.safetensors")
    subprocess.run([mlperfc, "run-reference", model, "--params", weights, "--inputs", batch,
                    "--function", "forward_backward", "-o", out],
                   check=True, capture_output=True)
    ours = read_safetensors(out)
    ref_params = {k: jnp.asarray(v, dtype=jnp.float64) for k, v in params.items()}
    loss, grads = jax.value_and_grad(moe_loss)(ref_params, jnp.asarray(tokens),
                                               jnp.asarray(labels))
    ok = compare(name, ours, float(loss), grads)
    return ok, params, ours


def learning_rate(step):
    return cosine_warmup_lr(step, LR, END_LR, WARMUP, STEPS)


def check_training(mlperfc, workdir):
    """STEPS steps on the interpreter, on the plan, and in JAX from the same weights."""
    model = os.path.join(workdir, "moe_block.mlir")
    rng = np.random.default_rng(5)
    stream = rng.integers(0, VOCAB, size=STEPS * TOKENS + 1).astype(np.int64)
    tokens, labels = stream_batches(stream, TOKENS, STEPS, 1)
    ours, weights = train_on_interpreter(mlperfc, model, workdir, tokens, labels, STEPS, seed=3)
    plan = os.path.join(workdir, "train.plan.pb")
    subprocess.run([mlperfc, "compile", model, "--precision", "fp32", "-o", plan], check=True,
                   capture_output=True)
    planned, _ = train_on_plan(mlperfc, plan, stream, workdir, weights, STEPS)
    # Expert tensor parallelism (fc1 column-parallel in [gate; up] blocks, fc2 row-parallel)
    # under mpirun, against the same JAX trajectory.
    tp_plan = os.path.join(workdir, "train.tp2.pb")
    subprocess.run([mlperfc, "compile", model, "--precision", "fp32", "--cluster", "1x2",
                    "--parallel", "tp=2", "-o", tp_plan], check=True, capture_output=True)
    tensor_parallel, run = train_on_plan(mlperfc, tp_plan, stream, workdir, weights, STEPS,
                                         launcher=("mpirun", "--oversubscribe", "-np", "2"),
                                         env=mpirun_env(), timeout=240)

    params = {k: jnp.asarray(v, dtype=jnp.float64) for k, v in read_safetensors(weights).items()}
    reference = adamw_trajectory(moe_loss, params, lambda step: [(tokens[step], labels[step])],
                                 STEPS, learning_rate, betas=(BETA1, BETA2), eps=ADAM_EPS,
                                 weight_decay=WEIGHT_DECAY, clip=CLIP)

    failures = []
    if len(ours) != STEPS or planned != ours:
        failures.append(f"mlperf-run on the plan {planned} differs from run-reference {ours}")
    if run.returncode != 0 or len(tensor_parallel) != STEPS:
        failures.append(f"tp=2 under mpirun gave {len(tensor_parallel)} steps (exit "
                        f"{run.returncode}): {run.stderr.strip()[-500:]}")
    worst = 0.0
    for tag, trajectory in (("one rank", ours), ("tp=2", tensor_parallel)):
        problems, tag_worst = trajectory_failures(tag, trajectory, reference, TRAJECTORY_RTOL)
        failures += problems
        worst = max(worst, tag_worst)
    print(f"training: {STEPS} steps, loss {ours[0][0]:.4f} -> {ours[-1][0]:.4f} (JAX f64 "
          f"{reference[0][0]:.4f} -> {reference[-1][0]:.4f}); one rank and tp=2 (mpirun) worst "
          f"rel diff {worst:.1e}; mlperf-run on the plan bit-identical to run-reference: "
          f"{planned == ours}: {'ok' if not failures else 'MISMATCH'}")
    for failure in failures[:10]:
        print("  " + failure)
    return not failures


def main():
    mlperfc, workdir = start_oracle("moe-oracle-")
    rng = np.random.default_rng(11)
    results = []

    ok, params, ours = run_case("routed", mlperfc, workdir, rng)
    results.append(ok)

    # Experts 2 and 5 with the same router row: equal logits for every token; where they
    # compete for a slot, the lower index wins (both orders are valid top-k; the reference's
    # torch.topk and jax.lax.top_k both pick the lower index first).
    def tie(p):
        p = dict(p)
        r = p["router"].copy()
        r[5] = r[2]
        p["router"] = r
        return p

    ok, params, ours = run_case("tied", mlperfc, workdir, rng, edit=tie)
    # The case only means something if the tie decides a selection: some token with experts
    # 2 and 5 competing for its last slot.
    tokens = read_safetensors(os.path.join(workdir, "tied.batch.safetensors"))["tokens"][0]
    h0 = params["embed"][tokens].astype(np.float64)
    x = h0 / np.sqrt(np.mean(h0 * h0, axis=-1, keepdims=True) + EPS) * params["norm"]
    logits = x @ params["router"].T.astype(np.float64)
    kth = -np.sort(-logits, axis=-1)[:, K - 1]
    deciding = int(np.sum(np.isclose(logits[:, 2], kth) & (np.sum(logits > kth[:, None], -1) ==
                                                            K - 1)))
    print(f"tied: {deciding} tokens whose last slot the tie between experts 2 and 5 decides")
    if deciding == 0:
        ok = False
    results.append(ok)

    # Every token on the same two experts (every embedding row equal: the same x, the same
    # top 2): one group holds all rows, six are empty and their weights' gradients exactly 0.
    def one_token(p):
        p = dict(p)
        e = p["embed"].copy()
        e[:] = e[0]
        p["embed"] = e
        return p

    ok, params, ours = run_case("crowded", mlperfc, workdir, rng, edit=one_token)
    unused = sum(1 for e in range(E) if not np.any(ours["grad.fc1"][e]))
    if unused != E - K:
        print(f"crowded: {unused} experts have zero fc1 gradients, expected {E - K}")
        ok = False
    results.append(ok)

    results.append(check_training(mlperfc, workdir))

    if all(results):
        print(f"moe oracle: {len(results)} cases ok")
        return 0
    print("moe oracle: MISMATCH")
    return 1


if __name__ == "__main__":
    sys.exit(main())
