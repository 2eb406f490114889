"""Checks the llama2_70b_lora declaration's training against an independent JAX implementation.

The JAX model below is written from the reference's semantics (shared/reference/BENCHMARKS.md
section 1: Llama 2 with one fused qkv_proj split [q, k, v], GQA, RoPE theta 10000 without
scaling, PEFT LoRA on qkv_proj and o_proj: y = W x + (alpha / r) * B(A(dropout(x))), the base
frozen, AdamW with decoupled weight decay on the adapters, global-norm clipping, cosine to zero
without warmup), not from mlperfc's code, and runs in float64. Its dropout masks come from its
own Philox4x32-10 and FNV-1a (numpy, from the Random123 definition), keyed as docs/train-step.md
states: element e of micro-batch c (its index in the run, in global-batch order) of the dropout
named n is kept when the first Philox word of counter (e, e >> 32, fnv1a(n), c) and key
(seed, seed >> 32) is at least floor(rate * 2^32).

For the tiny preset (`emit-model llama2-lora --preset llama2_70b_lora_tiny`, fp32) it:
  1. has `mlperfc run-reference` draw the initial weights (base and adapters) and train STEPS
     steps on batches with ignored labels (-100, so the masked token mean is exercised);
     the JAX model trains the same steps from the same weights; loss, LR and gradient norm
     must agree to TRAJECTORY_RTOL at every step, and the final adapters to PARAM_RTOL;
  2. checks that the adapters moved, that the base did not, and that dropout changed the
     loss (the same run with lora_dropout=0 differs);
  3. writes the batches with ignored labels as GovReport-style Parquet tables (pyarrow;
     `input_ids` and unshifted Hugging Face `labels`, two files, different row groups,
     codecs, encodings and page versions), turns them into our dataset with
     mlperf-prepare-data, and runs the same steps through compile -> plan -> mlperf-run,
     single-rank and under mpirun with tp=2 (with and without sequence parallelism), dp=2
     and pp=2, against JAX on the same batches. The single rank starts from the base weights
     as a Hugging Face sharded checkpoint (index + two shards, q/k/v unfused), tp=2 from
     the same layout with the adapters.

Usage: lora_oracle.py --mlperfc build/bin/mlperfc [--keep DIR]
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_oracle as base  # noqa: E402  (safetensors, Megatron writer, mpirun helpers)
from llama_oracle import jax, jnp  # noqa: E402

STEPS = 20
TRAJECTORY_RTOL = 1e-4
# Final adapters after 20 f32 steps against float64: AdamW with eps 1e-8 (the reference's)
# moves an element with a near-zero gradient by nearly a full lr-sized step whatever its sign
# noise, so f32 rounding can show in single elements. One step is lr / scale = 2e-3 / 0.125
# = 1.6e-2 of an A matrix's largest value; the bound is 1/16 of that.
PARAM_RTOL = 1e-3
# The eval loss of the final parameters (each within PARAM_RTOL of their scale).
EVAL_RTOL = 1e-4
SEED = 5
CFG = dict(layers=2, hidden=64, heads=4, kv_heads=2, ffn=160, vocab=256, seq=32,
           micro_batch=1, gbs=4, rank=16, alpha=32.0, dropout=0.1)
# A short cosine so the schedule and clipping (0.3) are exercised in 20 steps.
TRAIN = dict(lr=2e-3, end_lr=0.0, warmup_steps=0, max_steps=STEPS, decay_steps=STEPS)
BETA1, BETA2, ADAM_EPS, WEIGHT_DECAY, CLIP = 0.9, 0.999, 1e-8, 1e-4, 0.3
THETA, EPS = 10000.0, 1e-5
IGNORE = -100
ADAPTERS = ("qkv_proj", "o_proj")

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85


def philox_first_word(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 (Salmon et al., SC'11; Random123's philox4x32_R with R = 10), vectorized
    over uint64 arrays holding 32-bit values: the first output word."""
    mask = np.uint64(0xFFFFFFFF)
    c = [np.asarray(x, dtype=np.uint64) & mask for x in (c0, c1, c2, c3)]
    k0, k1 = np.uint64(k0) & mask, np.uint64(k1) & mask
    for r in range(10):
        p0 = np.uint64(M0) * c[0]
        p1 = np.uint64(M1) * c[2]
        hi0, lo0 = p0 >> np.uint64(32), p0 & mask
        hi1, lo1 = p1 >> np.uint64(32), p1 & mask
        c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
        if r < 9:
            k0, k1 = (k0 + np.uint64(W0)) & mask, (k1 + np.uint64(W1)) & mask
    return c[0]


def fnv1a(name):
    h = 2166136261
    for byte in name.encode():
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return h


def dropout_mask(shape, name, counter, seed, rate):
    """Keep (1) or drop (0) for every element of a [micro_batch, seq, features] tensor."""
    e = np.arange(int(np.prod(shape)), dtype=np.uint64)
    words = philox_first_word(e, e >> np.uint64(32), np.full_like(e, fnv1a(name)),
                              np.full_like(e, counter), seed, seed >> 32)
    return (words >= np.uint64(int(np.floor(rate * 2.0 ** 32)))).astype(np.float64).reshape(shape)


def layer_masks(cfg, counter, seed):
    """Per layer, the qkv_proj and o_proj adapters' dropout masks of micro-batch `counter`."""
    shape_in = (cfg["micro_batch"], cfg["seq"], cfg["hidden"])
    masks = {}
    for i in range(cfg["layers"]):
        for module in ADAPTERS:
            name = f"model.layers.{i}.self_attn.{module}.lora_dropout"
            masks[(i, module)] = dropout_mask(shape_in, name, counter, seed, cfg["dropout"])
    return masks


def rope(x):
    seq, half = x.shape[1], x.shape[-1] // 2
    inv = 1.0 / THETA ** (np.arange(0, x.shape[-1], 2) / x.shape[-1])
    angles = np.arange(seq)[:, None] * inv[None, :]
    cos, sin = jnp.cos(angles)[None, :, None, :], jnp.sin(angles)[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def rms_norm(x, w):
    return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS) * w


def loss_fn(adapters, frozen, tokens, labels, masks, cfg):
    """Masked mean token cross-entropy of one micro-batch (HF: mean over labels != -100)."""
    params = {**frozen, **adapters}
    heads, kv, d = cfg["heads"], cfg["kv_heads"], cfg["hidden"]
    hd = d // heads
    batch, seq = tokens.shape
    scaling = cfg["alpha"] / cfg["rank"]
    keep = 1.0 / (1.0 - cfg["dropout"])
    h = params["model.embed_tokens.weight"][tokens]
    causal = jnp.tril(jnp.ones((seq, seq), dtype=bool))

    def lora(x, i, module):
        p = f"model.layers.{i}.self_attn.{module}."
        dropped = x * masks[(i, module)] * keep
        return (x @ params[p + "weight"].T
                + scaling * ((dropped @ params[p + "lora_A.weight"].T)
                             @ params[p + "lora_B.weight"].T))

    for i in range(cfg["layers"]):
        p = lambda name: params[f"model.layers.{i}.{name}"]  # noqa: E731
        x = rms_norm(h, p("input_layernorm.weight"))
        qkv = lora(x, i, "qkv_proj")
        q, k, v = jnp.split(qkv, [heads * hd, heads * hd + kv * hd], axis=-1)
        q = rope(q.reshape(batch, seq, heads, hd))
        k = rope(k.reshape(batch, seq, kv, hd))
        v = v.reshape(batch, seq, kv, hd)
        q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
        k, v = jnp.repeat(k, heads // kv, axis=1), jnp.repeat(v, heads // kv, axis=1)
        scores = jnp.where(causal, (q @ k.transpose(0, 1, 3, 2)) / np.sqrt(hd), -jnp.inf)
        context = (jax.nn.softmax(scores, axis=-1) @ v).transpose(0, 2, 1, 3)
        h = h + lora(context.reshape(batch, seq, heads * hd), i, "o_proj")
        x = rms_norm(h, p("post_attention_layernorm.weight"))
        gate = jax.nn.silu(x @ p("mlp.gate_proj.weight").T)
        h = h + (gate * (x @ p("mlp.up_proj.weight").T)) @ p("mlp.down_proj.weight").T
    logits = rms_norm(h, params["model.norm.weight"]) @ params["lm_head.weight"].T
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    valid = labels != IGNORE
    picked = jnp.take_along_axis(log_probs, jnp.where(valid, labels, 0)[..., None], axis=-1)[..., 0]
    return -jnp.sum(jnp.where(valid, picked, 0.0)) / jnp.sum(valid)


def is_adapter(name):
    return ".lora_A." in name or ".lora_B." in name


def learning_rate(step):
    """HF get_cosine_schedule_with_warmup with no warmup (= NeMo's with W = 0)."""
    if step > TRAIN["max_steps"]:
        return TRAIN["end_lr"]
    return TRAIN["lr"] * 0.5 * (1 + np.cos(np.pi * step / TRAIN["max_steps"]))


def oracle_trajectory(params, tokens, labels, cfg, seed):
    """STEPS steps of the reference's LoRA training; returns (loss, lr, norm) per step and the
    final parameters."""
    adapters = {k: jnp.asarray(v) for k, v in params.items() if is_adapter(k)}
    frozen = {k: jnp.asarray(v) for k, v in params.items() if not is_adapter(k)}
    grad_fn = jax.value_and_grad(loss_fn)
    m = {k: jnp.zeros_like(v) for k, v in adapters.items()}
    v = {k: jnp.zeros_like(x) for k, x in adapters.items()}
    micro = cfg["micro_batch"]
    accumulation = cfg["gbs"] // micro
    history = []
    for step in range(STEPS):
        loss_sum, grads = 0.0, {k: jnp.zeros_like(x) for k, x in adapters.items()}
        for a in range(accumulation):
            rows = slice(a * micro, (a + 1) * micro)
            masks = layer_masks(cfg, step * accumulation + a, seed)
            loss, g = grad_fn(adapters, frozen, jnp.asarray(tokens[step, rows]),
                              jnp.asarray(labels[step, rows]), masks, cfg)
            loss_sum += float(loss)
            grads = {k: grads[k] + g[k] / accumulation for k in grads}
        norm = float(jnp.sqrt(sum(jnp.sum(g * g) for g in grads.values())))
        coefficient = CLIP / (norm + 1e-6)
        if coefficient < 1:
            grads = {k: g * coefficient for k, g in grads.items()}
        lr, t = learning_rate(step), step + 1
        for k in adapters:
            m[k] = BETA1 * m[k] + (1 - BETA1) * grads[k]
            v[k] = BETA2 * v[k] + (1 - BETA2) * grads[k] ** 2
            m_hat, v_hat = m[k] / (1 - BETA1 ** t), v[k] / (1 - BETA2 ** t)
            adapters[k] = adapters[k] - lr * (m_hat / (jnp.sqrt(v_hat) + ADAM_EPS)
                                              + WEIGHT_DECAY * adapters[k])
        history.append((loss_sum / accumulation, lr, norm))
    return history, {**frozen, **adapters}


def oracle_eval_loss(params, tokens, labels, cfg):
    """The reference's eval loss: the mean over samples of each sample's token mean over its
    labels other than -100, dropout off (HF Trainer evaluates in eval mode)."""
    plain = {**cfg, "dropout": 0.0}
    ones = {(i, module): jnp.ones((1, cfg["seq"], cfg["hidden"]))
            for i in range(cfg["layers"]) for module in ADAPTERS}
    adapters = {k: jnp.asarray(v) for k, v in params.items() if is_adapter(k)}
    frozen = {k: jnp.asarray(v) for k, v in params.items() if not is_adapter(k)}
    losses = [float(loss_fn(adapters, frozen, jnp.asarray(tokens[r:r + 1]),
                            jnp.asarray(labels[r:r + 1]), ones, plain))
              for r in range(len(tokens))]
    return float(np.mean(losses))


def emit(mlperfc, path, extra=""):
    sets = ",".join(f"{k}={v}" for k, v in {
        "dtype": "f32", "gbs": CFG["gbs"], "micro_batch": CFG["micro_batch"], **TRAIN}.items())
    subprocess.run([mlperfc, "emit-model", "llama2-lora", "--preset", "llama2_70b_lora_tiny",
                    "--set", sets + extra, "-o", path], check=True, capture_output=True)


def batches(with_ignored):
    """STEPS global batches of the base oracle's counting stream; with `with_ignored`, a
    prompt-like prefix of every sample and a few scattered labels are -100."""
    cfg = {**CFG}
    base.STEPS = STEPS
    tokens, labels = base.train_batches(cfg)
    labels = labels.copy()
    if with_ignored:
        rng = np.random.default_rng(11)
        prefix = rng.integers(0, cfg["seq"] // 2, size=labels.shape[:2])
        for index in np.ndindex(labels.shape[:2]):
            labels[index][:prefix[index]] = IGNORE
        labels[rng.random(labels.shape) < 0.05] = IGNORE
    return tokens, labels


def compare_params(got, reference, failures):
    worst = 0.0
    for key, ref in reference.items():
        ref = np.asarray(ref)
        if key not in got or got[key].shape != ref.shape:
            failures.append(f"{key}: missing or of another shape")
            continue
        scale = np.max(np.abs(ref))
        error = float(np.max(np.abs(got[key] - ref)) / scale) if scale > 0 else float(
            np.max(np.abs(got[key])))
        worst = max(worst, error) if np.isfinite(error) else float("inf")
        if not base.finite_and_within(error, PARAM_RTOL):
            failures.append(f"final {key}: max diff {error:.1e} of its scale")
    return worst


def report(what, history, reference, failures, extra=""):
    worst, step_failures = base.compare_steps(history, reference) if history else (
        float("inf"), ["no steps"])
    failures = step_failures + failures
    if len(history) != STEPS:
        failures.append(f"expected {STEPS} steps, got {len(history)}")
    print(f"{what}: loss {history[0][0] if history else float('nan'):.4f} -> "
          f"{history[-1][0] if history else float('nan'):.4f} (JAX f64 {reference[0][0]:.4f} -> "
          f"{reference[-1][0]:.4f}), worst rel diff of loss, lr, grad_norm {worst:.1e}{extra}: "
          f"{'ok' if not failures else 'MISMATCH'}")
    for failure in failures[:10]:
        print("  " + failure)
    return not failures


def check_reference(mlperfc, workdir):
    """run-reference with ignored labels against JAX; dropout and freezing observable."""
    model = os.path.join(workdir, "lora.mlir")
    emit(mlperfc, model)
    tokens, labels = batches(with_ignored=True)
    inputs = os.path.join(workdir, "lora.batches.safetensors")
    base.write_safetensors(inputs, {"tokens": tokens, "labels": labels})
    weights = os.path.join(workdir, "lora.weights.safetensors")
    final_path = os.path.join(workdir, "lora.final.safetensors")
    run = subprocess.run([mlperfc, "run-reference", model, "--seed", str(SEED), "--save-params",
                          weights, "--inputs", inputs, "--train-steps", str(STEPS), "-o",
                          final_path], check=True, capture_output=True, text=True)
    ours = base.step_lines(run.stdout)
    initial = base.read_safetensors(weights)
    reference, final = oracle_trajectory(dict(initial), tokens, labels, CFG, SEED)
    failures = []
    got = {k: v for k, v in base.read_safetensors(final_path).items()
           if not k.startswith("optimizer.")}
    worst_param = compare_params(got, final, failures)
    moved = [k for k in initial if is_adapter(k) and not np.array_equal(initial[k], got[k])]
    still = [k for k in initial if not is_adapter(k) and np.array_equal(initial[k], got[k])]
    if len(moved) != 4 * CFG["layers"] or len(still) != len(initial) - 4 * CFG["layers"]:
        failures.append(f"{len(moved)} adapters moved, {len(still)} base tensors unchanged of "
                        f"{len(initial)}")
    ignored = float(np.mean(labels == IGNORE))
    # Without dropout the losses differ: the masks are applied.
    plain = os.path.join(workdir, "lora_nodrop.mlir")
    emit(mlperfc, plain, ",lora_dropout=0")
    run = subprocess.run([mlperfc, "run-reference", plain, "--seed", str(SEED), "--inputs",
                          inputs, "--train-steps", str(STEPS)], check=True, capture_output=True,
                         text=True)
    undropped = base.step_lines(run.stdout)
    # Step 0 is the base model's loss either way (B starts at zero); later steps differ.
    if not ours or len(undropped) != len(ours) or undropped[0][0] != ours[0][0] or all(
            a[0] == b[0] for a, b in zip(undropped[1:], ours[1:])):
        failures.append("lora_dropout=0 should give the same first loss (B = 0) and other "
                        "later losses (dropout applied)")
    return report("llama2_70b_lora_tiny run-reference (fp32, labels -100 masked)", ours,
                  reference, failures,
                  f", {ignored:.0%} of labels ignored, final parameters {worst_param:.1e} of "
                  f"their scale, {len(moved)} adapters moved, base frozen"), weights


def write_parquet_rows(workdir, tokens, labels, stem="train", parts=2):
    """The samples in run order as Parquet tables the way Hugging Face datasets stores
    GovReport: per row `input_ids` and the unshifted `labels` (label i is the target of
    position i - 1), so aligned[i] = hf[i + 1] and the last position has none."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    rows_tokens = tokens.reshape(-1, tokens.shape[-1]).astype(np.int64)
    aligned = labels.reshape(-1, labels.shape[-1]).astype(np.int64)
    assert np.all(aligned[:, -1] == IGNORE)
    hf = np.concatenate([rows_tokens[:, :1], aligned[:, :-1]], axis=1)
    half = len(rows_tokens) // 2 if parts == 2 else len(rows_tokens)
    paths = []
    layouts = ((slice(0, half), dict(compression="snappy", row_group_size=3)),
               (slice(half, None), dict(compression="zstd", use_dictionary=False,
                                        data_page_version="2.0")))
    for part, (rows, options) in enumerate(layouts[:parts]):
        table = pa.table({"input_ids": [list(r) for r in rows_tokens[rows]],
                          "labels": [list(r) for r in hf[rows]],
                          "attention_mask": [[1] * rows_tokens.shape[1]] * len(rows_tokens[rows])})
        paths.append(os.path.join(workdir, f"{stem}-0000{part}-of-0000{parts}.parquet"))
        pq.write_table(table, paths[-1], **options)
    return paths


def write_hf_checkpoint(directory, tensors, cfg):
    """`tensors` as a Hugging Face sharded checkpoint: q_proj, k_proj and v_proj apart (as HF's
    Llama checkpoints store them) instead of the declaration's fused qkv_proj, spread over two
    `model-0000k-of-00002.safetensors` files named by `model.safetensors.index.json`."""
    os.makedirs(directory, exist_ok=True)
    head_dim = cfg["hidden"] // cfg["heads"]
    rows = [cfg["heads"] * head_dim, cfg["kv_heads"] * head_dim, cfg["kv_heads"] * head_dim]
    unfused = {}
    for name, value in tensors.items():
        value = np.asarray(value, dtype=np.float32)
        if name.endswith("self_attn.qkv_proj.weight"):
            stem = name[:-len("qkv_proj.weight")]
            for part, block in zip(("q", "k", "v"), np.split(value, np.cumsum(rows)[:2])):
                unfused[f"{stem}{part}_proj.weight"] = np.ascontiguousarray(block)
        else:
            unfused[name] = value
    names = sorted(unfused)
    shards = {f"model-0000{k + 1}-of-00002.safetensors": names[k::2] for k in range(2)}
    weight_map = {}
    for shard, members in shards.items():
        base.write_safetensors(os.path.join(directory, shard), {n: unfused[n] for n in members})
        weight_map.update({n: shard for n in members})
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": sum(v.nbytes for v in unfused.values())},
                   "weight_map": weight_map}, f)
    return directory


def check_plans(mlperfc, workdir, weights):
    """compile -> plan -> mlperf-run, one rank and under mpirun (tp, dp, pp), against JAX."""
    model = os.path.join(workdir, "lora.mlir")
    base.STEPS = STEPS
    tokens, labels = batches(with_ignored=True)
    labels[..., -1] = IGNORE  # Hugging Face's shift leaves the last position without a label
    data = os.path.join(workdir, "lora.data")
    prepare = subprocess.run([os.path.join(os.path.dirname(mlperfc), "mlperf-prepare-data"),
                              "--output", data] + write_parquet_rows(workdir, tokens, labels),
                             capture_output=True, text=True)
    if prepare.returncode != 0:
        print(f"mlperf-prepare-data failed: {prepare.stderr}")
        return False
    print(prepare.stdout.strip())
    # Evaluation rows (the tiny preset's eval_samples) with prompts of -100, as GovReport's
    # validation split masks its prompts.
    rng = np.random.default_rng(23)
    eval_rows = 16
    eval_tokens = rng.integers(0, CFG["vocab"], size=(eval_rows, CFG["seq"]))
    eval_labels = np.concatenate([eval_tokens[:, 1:], np.full((eval_rows, 1), IGNORE)], axis=1)
    for r, prefix in enumerate(rng.integers(1, CFG["seq"] // 2, size=eval_rows)):
        eval_labels[r, :prefix] = IGNORE
    eval_data = os.path.join(workdir, "lora.eval")
    prepare = subprocess.run([os.path.join(os.path.dirname(mlperfc), "mlperf-prepare-data"),
                              "--output", eval_data] +
                             write_parquet_rows(workdir, eval_tokens, eval_labels, "validation", 1),
                             capture_output=True, text=True)
    if prepare.returncode != 0:
        print(f"mlperf-prepare-data failed: {prepare.stderr}")
        return False
    initial = base.read_safetensors(weights)
    reference, final = oracle_trajectory(dict(initial), tokens, labels, CFG, SEED)
    mlperf_run = os.path.join(os.path.dirname(mlperfc), "mlperf-run")
    # The single rank starts from the base alone in Hugging Face's sharded layout (q, k, v
    # apart), as a fine-tune from a base checkpoint does: the plan draws the adapters from the
    # seed, the same values run-reference drew. tp=2 starts from the same layout with the
    # adapters in it (each rank stacks q, k, v and takes its blocks' slices).
    base_only = write_hf_checkpoint(os.path.join(workdir, "lora.hf-base"),
                                    {k: v for k, v in initial.items() if not is_adapter(k)}, CFG)
    hf_full = write_hf_checkpoint(os.path.join(workdir, "lora.hf-full"), initial, CFG)
    ok = True
    for tag, cluster, parallel in (("1 rank (adapters drawn by the plan)", "1x1", None), ("tp=2", "1x2", "tp=2"),
                                   ("tp=2 sp", "1x2", "tp=2,sp=on"),
                                   ("dp=2", "1x2", "dp=2"), ("pp=2", "1x2", "pp=2")):
        slug = tag.replace("=", "").replace(" ", "_")
        plan = os.path.join(workdir, f"lora.{slug}.pb")
        compile_args = [mlperfc, "compile", model, "-o", plan]
        if parallel:
            compile_args += ["--cluster", cluster, "--parallel", parallel]
        subprocess.run(compile_args, check=True, capture_output=True)
        checkpoint = os.path.join(workdir, f"lora.{slug}.final.safetensors")
        command = [mlperf_run, plan, "--data", data, "--data-order", "sequential",
                   "--init-from", {None: base_only, "tp=2": hf_full}.get(parallel, weights),
                   "--seed", str(SEED), "--max-steps", str(STEPS),
                   "--print-every", "1", "--save", checkpoint]
        if not parallel:
            # The eval after the last step (the first three are the benchmark's skipped ones),
            # with a target it meets so that the run exits 0.
            command += ["--eval-data", eval_data, "--target", "100"]
        if parallel:
            command = ["mpirun", "--oversubscribe", "-np", "2"] + command
        run = subprocess.run(command, capture_output=True, text=True, env=base.mpirun_env())
        failures = [] if run.returncode == 0 else [
            f"failed ({run.returncode}): {run.stderr.strip()[-500:]}"]
        history = base.step_lines(run.stdout) if run.returncode == 0 else []
        worst_param = float("nan")
        if run.returncode == 0:
            if parallel:
                stem = checkpoint[:-len(".safetensors")]
                got = base.reassemble([f"{stem}.rank{r}-of-2.safetensors" for r in range(2)])
            else:
                got = {k: v for k, v in base.read_safetensors(checkpoint).items()
                       if not k.startswith("optimizer.")}
            worst_param = compare_params(got, final, failures)
        extra = ""
        if run.returncode == 0 and not parallel:
            evals = [float(line.split("eval_loss ")[1].split()[0])
                     for line in run.stdout.splitlines() if line.startswith("eval step ")]
            expected = oracle_eval_loss(final, eval_tokens, eval_labels, CFG)
            error = abs(evals[-1] - expected) / expected if evals else float("inf")
            if len(evals) != 1 or not base.finite_and_within(error, EVAL_RTOL):
                failures.append(f"eval losses {evals}, JAX {expected:.6f}")
            extra = (f", eval loss after step {STEPS} {evals[-1] if evals else float('nan'):.6f} "
                     f"(JAX {expected:.6f}, rel diff {error:.1e}; per-sample means)")
        ok = report(f"llama2_70b_lora_tiny mlperf-run {tag}", history or [], reference, failures,
                    f", final parameters {worst_param:.1e} of their scale{extra}") and ok
    return ok


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mlperfc", required=True)
    parser.add_argument("--keep", help="keep the files in this directory")
    args = parser.parse_args()

    def run_all(workdir):
        reference_ok, weights = check_reference(args.mlperfc, workdir)
        return [reference_ok, check_plans(args.mlperfc, workdir, weights)]

    base.run_and_report(run_all, args.keep)


if __name__ == "__main__":
    main()
