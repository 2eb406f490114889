"""Checks mlperfc's reference execution against an independent Llama 3.1 in JAX.

The JAX model below is written from the Llama 3.1 / MLPerf reference semantics (GQA, RoPE with
Llama 3.1 frequency scaling, RMSNorm, SwiGLU, untied head, mean token cross-entropy), not from
mlperfc's code, and runs in float64. For each tiny configuration it:
  1. writes the declaration with `mlperfc emit-model` (fp32 parameters and activations),
  2. has `mlperfc run-reference` draw the initial weights (Philox) and write them as
     safetensors, and compute the loss and every parameter gradient of one micro-batch,
  3. reads the same weights with its own safetensors reader, computes the loss and gradients
     with jax.value_and_grad, and compares: |ours - ref| <= ATOL * max|ref| + RTOL * |ref|
     elementwise for every gradient, and the loss to LOSS_RTOL;
  4. trains STEPS optimizer steps on both sides from the same weights and batches (micro-batch
     accumulation, global-norm clipping, the NeMo cosine-with-warmup schedule with warmup
     active, AdamW with bias correction and decoupled weight decay, all implemented here from
     shared/reference/MLPERF.md) and compares loss, LR and gradient norm at every step to
     TRAJECTORY_RTOL;
  5. for the "gqa" configuration, also trains the same steps under mpirun with tp=2, pp=2 and
     dp=2 with ZeRO-1 and with ZeRO-3 (`mlperfc compile --cluster 1x2`), and compares each run's losses, LRs
     and gradient norms and its final parameters (reassembled from the ranks' checkpoint
     files by their `split:` metadata) with JAX directly; and the same model declared with one
     fused qkv_proj, single-rank and tp=2, against JAX reading its three row blocks;
  6. trains the "gqa" configuration with Adagrad (tg.optimizer name = "adagrad", clipped, with
     weight decay and a non-zero initial sum) through run-reference, mlperf-run and
     mlperf-run under mpirun with dp=2 and ZeRO-1, and compares the trajectory, the final
     parameters and the final sums of squares with an Adagrad written here in float64.

Usage: llama_oracle.py --mlperfc build/bin/mlperfc [--keep DIR]
Exit status 0 when every configuration matches; prints one line per configuration.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")
import jax.numpy as jnp  # noqa: E402

# fp32 execution against a float64 oracle: the loss agrees to ~1e-7 relative; gradients to
# ~1e-6 of their tensor's scale. These bounds leave an order of magnitude of margin.
LOSS_RTOL = 1e-5
RTOL = 1e-4
ATOL = 1e-5

# f32 training against the float64 oracle over 20 AdamW steps: per-step losses agree to
# ~1e-6 relative; the bound leaves margin for Adam's sign-like updates of tiny gradients.
TRAJECTORY_RTOL = 1e-4
STEPS = 20

# Training hyperparameters (warmup 5 of 20 steps: both the linear warmup and the cosine decay
# are exercised). "gqa" clips (its norms exceed 1) and decays every parameter; "mha" never
# clips (limit 10) and decays only matrices.
TRAIN = dict(lr=2e-3, warmup_steps=5, max_steps=20)
TRAIN_OVERRIDES = {
    "gqa": dict(clip=1.0, weight_decay_params="all"),
    "mha": dict(clip=10.0, weight_decay_params="matrices"),
}

CONFIGS = {
    # Grouped-query attention (kv_heads < heads), two sequences per micro-batch and four
    # micro-batches per step (gradient accumulation: two per rank at dp=2, which ZeRO-2
    # reduce-scatters one by one; one per rank at dp=4, which hybrid sharding splits 2 x 2).
    "gqa": dict(layers=2, hidden=64, heads=4, kv_heads=2, ffn=160, vocab=256, seq=32,
                micro_batch=2, gbs=8),
    # Multi-head attention (kv_heads == heads), three layers, odd sizes, no accumulation.
    "mha": dict(layers=3, hidden=48, heads=3, kv_heads=3, ffn=128, vocab=96, seq=16,
                micro_batch=1, gbs=1),
}
BETA1, BETA2, ADAM_EPS, WEIGHT_DECAY = 0.9, 0.95, 1e-5, 0.1
THETA, FACTOR, LOW, HIGH, ORIGINAL = 500000.0, 8.0, 1.0, 4.0, 8192
EPS = 1e-5

DTYPES = {"F32": np.float32, "F64": np.float64, "BF16": ml_dtypes.bfloat16,
          "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2,
          "I32": np.int32, "I64": np.int64}


def read_safetensors(path, with_metadata=False):
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    if with_metadata:
        return read_safetensors(path), header.get("__metadata__", {})
    body = data[8 + size:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        array = np.frombuffer(body[begin:end], dtype=DTYPES[entry["dtype"]])
        real = array.dtype.kind == "f" or entry["dtype"] in ("BF16", "F8_E4M3", "F8_E5M2")
        out[name] = array.reshape(entry["shape"]).astype(np.float64 if real else np.int64)
    return out


def write_safetensors(path, tensors):
    header, chunks, offset = {}, [], 0
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array).tobytes()
        kind = {np.dtype(np.int64): "I64", np.dtype(np.int32): "I32",
                np.dtype(np.float32): "F32"}[array.dtype]
        header[name] = {"dtype": kind, "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    encoded = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks))


def llama31_inverse_frequencies(head_dim):
    """Hugging Face `_compute_llama3_parameters`."""
    inv = 1.0 / THETA ** (np.arange(0, head_dim, 2) / head_dim)
    wavelength = 2 * np.pi / inv
    low_wavelength, high_wavelength = ORIGINAL / LOW, ORIGINAL / HIGH
    scaled = np.where(wavelength > low_wavelength, inv / FACTOR, inv)
    smooth = (ORIGINAL / wavelength - LOW) / (HIGH - LOW)
    smoothed = (1 - smooth) * scaled / FACTOR + smooth * scaled
    medium = ~(wavelength < high_wavelength) & ~(wavelength > low_wavelength)
    return np.where(medium, smoothed, scaled)


def rope(x, inv_freq):
    seq, half = x.shape[1], x.shape[-1] // 2
    angles = np.arange(seq)[:, None] * inv_freq[None, :]          # [S, D/2]
    cos, sin = jnp.cos(angles)[None, :, None, :], jnp.sin(angles)[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def rms_norm(x, w):
    return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS) * w


def loss_fn(params, tokens, labels, cfg):
    heads, kv_heads = cfg["heads"], cfg["kv_heads"]
    head_dim = cfg["hidden"] // heads
    batch, seq = tokens.shape
    inv_freq = llama31_inverse_frequencies(head_dim)
    h = params["model.embed_tokens.weight"][tokens]
    causal = jnp.tril(jnp.ones((seq, seq), dtype=bool))
    for i in range(cfg["layers"]):
        p = lambda name: params[f"model.layers.{i}.{name}"]  # noqa: E731
        x = rms_norm(h, p("input_layernorm.weight"))
        q = (x @ p("self_attn.q_proj.weight").T).reshape(batch, seq, heads, head_dim)
        k = (x @ p("self_attn.k_proj.weight").T).reshape(batch, seq, kv_heads, head_dim)
        v = (x @ p("self_attn.v_proj.weight").T).reshape(batch, seq, kv_heads, head_dim)
        q, k = rope(q, inv_freq), rope(k, inv_freq)
        q, k, v = (t.transpose(0, 2, 1, 3) for t in (q, k, v))
        # Query head h reads KV head h // (heads / kv_heads).
        k = jnp.repeat(k, heads // kv_heads, axis=1)
        v = jnp.repeat(v, heads // kv_heads, axis=1)
        scores = (q @ k.transpose(0, 1, 3, 2)) / np.sqrt(head_dim)
        scores = jnp.where(causal, scores, -jnp.inf)
        context = jax.nn.softmax(scores, axis=-1) @ v
        context = context.transpose(0, 2, 1, 3).reshape(batch, seq, heads * head_dim)
        h = h + context @ p("self_attn.o_proj.weight").T
        x = rms_norm(h, p("post_attention_layernorm.weight"))
        gate = jax.nn.silu(x @ p("mlp.gate_proj.weight").T)
        h = h + (gate * (x @ p("mlp.up_proj.weight").T)) @ p("mlp.down_proj.weight").T
    logits = rms_norm(h, params["model.norm.weight"]) @ params["lm_head.weight"].T
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(log_probs, labels[..., None], axis=-1))


def finite_and_within(error, tolerance):
    """False for NaN or Inf errors, which plain `error > tolerance` tests would let pass."""
    return bool(np.isfinite(error)) and error <= tolerance


def compare_steps(got, reference):
    """The worst relative difference of (loss, lr, grad_norm) over the steps (inf for NaN),
    and a line per value outside TRAJECTORY_RTOL."""
    worst, failures = 0.0, []
    for step, (ours, ref) in enumerate(zip(got, reference)):
        for what, a, b in zip(("loss", "lr", "grad_norm"), ours, ref):
            error = abs(a - b) / abs(b)
            worst = max(worst, error) if np.isfinite(error) else float("inf")
            if not finite_and_within(error, TRAJECTORY_RTOL):
                failures.append(f"step {step} {what}: {a} vs {b} (rel {error:.1e})")
    return worst, failures


def learning_rate(step):
    """NeMo CosineAnnealing + WarmupAnnealHoldPolicy (shared/reference/MLPERF.md)."""
    base, end = TRAIN["lr"], 0.1 * TRAIN["lr"]
    warmup, total = TRAIN["warmup_steps"], TRAIN["max_steps"]
    if step <= warmup:
        return base * (step + 1) / (warmup + 1)
    if step > total:
        return end
    return end + (base - end) * 0.5 * (1 + np.cos(np.pi * (step - warmup) / (total - warmup)))


def train_stream(cfg):
    """The token stream the trajectories train on, one window of seq + 1 tokens per sample
    with consecutive windows overlapping by one token (Megatron GPT samples of a one-document
    dataset in file order). Window i counts (start_i + t * stride_i) mod vocab, so the model
    has something to learn; only each window's last label jumps to the next window's start."""
    rng = np.random.default_rng(7)
    windows = STEPS * cfg["gbs"]
    start = rng.integers(0, cfg["vocab"], size=(windows, 1))
    stride = rng.integers(1, 4, size=(windows, 1))
    counting = (start + stride * np.arange(cfg["seq"])[None, :]) % cfg["vocab"]
    return np.append(counting.reshape(-1), rng.integers(0, cfg["vocab"])).astype(np.int64)


def train_batches(cfg):
    """STEPS global batches [gbs, seq] of tokens and next-token labels from `train_stream`."""
    stream, seq = train_stream(cfg), cfg["seq"]
    shape = (STEPS, cfg["gbs"], seq)
    tokens = np.stack([stream[i * seq:(i + 1) * seq] for i in range(STEPS * cfg["gbs"])])
    labels = np.stack([stream[i * seq + 1:(i + 1) * seq + 1] for i in range(STEPS * cfg["gbs"])])
    return tokens.reshape(shape), labels.reshape(shape)


def write_megatron(prefix, tokens):
    """A one-document Megatron MMIDIDX dataset (uint16 tokens), written independently of
    mlperf-prepare-data from Megatron-LM's indexed_dataset.py layout."""
    with open(prefix + ".bin", "wb") as f:
        f.write(np.asarray(tokens, dtype="<u2").tobytes())
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 8, 1, 2))
        f.write(struct.pack("<i", len(tokens)) + struct.pack("<q", 0) + struct.pack("<2q", 0, 1))


def adamw_update(params, train):
    """AdamW with bias correction and decoupled weight decay (FusedAdam adam_w_mode), updating
    `params` in place at step `step` (0-based) with learning rate `lr`."""
    m = {k: jnp.zeros_like(v) for k, v in params.items()}
    v = {k: jnp.zeros_like(x) for k, x in params.items()}

    def update(step, lr, grads):
        t = step + 1
        for k in params:
            decay = WEIGHT_DECAY if (train["weight_decay_params"] == "all"
                                     or params[k].ndim >= 2) else 0.0
            m[k] = BETA1 * m[k] + (1 - BETA1) * grads[k]
            v[k] = BETA2 * v[k] + (1 - BETA2) * grads[k] ** 2
            m_hat, v_hat = m[k] / (1 - BETA1 ** t), v[k] / (1 - BETA2 ** t)
            params[k] = params[k] - lr * (m_hat / (jnp.sqrt(v_hat) + ADAM_EPS)
                                          + decay * params[k])
    return update, {}


def adagrad_update(params, train):
    """Adagrad as torch.optim.Adagrad defines it (lr_decay 0): g += wd * p; G += g^2;
    p -= lr * g / (sqrt(G) + eps), G starting at the initial accumulator value. Returns the
    update and its state {"sum": G}."""
    state = {"sum": {k: jnp.full_like(v, train["initial_accumulator_value"])
                     for k, v in params.items()}}

    def update(step, lr, grads):
        for k in params:
            decay = train["weight_decay"] if (train["weight_decay_params"] == "all"
                                              or params[k].ndim >= 2) else 0.0
            g = grads[k] + decay * params[k]
            state["sum"][k] = state["sum"][k] + g * g
            params[k] = params[k] - lr * g / (jnp.sqrt(state["sum"][k]) + train["eps"])
    return update, state


def oracle_trajectory(params, tokens, labels, cfg, train, optimizer=adamw_update,
                      state_out=None):
    """Trains STEPS steps in float64, updating `params` in place; returns (loss, lr,
    grad_norm) per step and puts the optimizer's final state into `state_out`."""
    grad_fn = jax.jit(jax.value_and_grad(lambda p, t, l: loss_fn(p, t, l, cfg)))
    update, state = optimizer(params, train)
    if state_out is not None:
        state_out.update(state)
    micro = cfg["micro_batch"]
    accumulation = cfg["gbs"] // micro
    history = []
    for step in range(STEPS):
        loss_sum, grads = 0.0, {k: jnp.zeros_like(x) for k, x in params.items()}
        for a in range(accumulation):
            rows = slice(a * micro, (a + 1) * micro)
            loss, g = grad_fn(params, jnp.asarray(tokens[step, rows]),
                              jnp.asarray(labels[step, rows]))
            loss_sum += float(loss)
            grads = {k: grads[k] + g[k] / accumulation for k in grads}
        norm = float(jnp.sqrt(sum(jnp.sum(g * g) for g in grads.values())))
        coefficient = train["clip"] / (norm + 1e-6)
        if coefficient < 1:
            grads = {k: g * coefficient for k, g in grads.items()}
        lr = learning_rate(step)
        update(step, lr, grads)
        history.append((loss_sum / accumulation, lr, norm))
    return history


def train_ours(mlperfc, workdir, tag, cfg, train, seed, extra_sets=""):
    """Emits the model, trains STEPS steps with `mlperfc run-reference`, and returns the
    per-step (loss, lr, grad_norm), the initial-weights file, and the batches."""
    model = os.path.join(workdir, f"{tag}.mlir")
    sets = ",".join(f"{k}={v}" for k, v in {**cfg, **train}.items()) + extra_sets
    subprocess.run([mlperfc, "emit-model", "llama3", "--set", sets, "-o", model],
                   check=True, capture_output=True)
    tokens, labels = train_batches(cfg)
    batches = os.path.join(workdir, f"{tag}.batches.safetensors")
    write_safetensors(batches, {"tokens": tokens, "labels": labels})
    weights = os.path.join(workdir, f"{tag}.weights.safetensors")
    run = subprocess.run([mlperfc, "run-reference", model, "--seed", str(seed), "--save-params",
                          weights, "--inputs", batches, "--train-steps", str(STEPS)],
                         check=True, capture_output=True, text=True)
    ours = step_lines(run.stdout)
    # The same steps through the product path: compile -> plan.pb -> mlperf-run on the
    # stream as a Megatron dataset, from the same initial weights.
    plan = os.path.join(workdir, f"{tag}.plan.pb")
    subprocess.run([mlperfc, "compile", model, "-o", plan], check=True, capture_output=True)
    data = os.path.join(workdir, f"{tag}.data")
    write_megatron(data, train_stream(cfg))
    mlperf_run = os.path.join(os.path.dirname(mlperfc), "mlperf-run")
    run = subprocess.run([mlperf_run, plan, "--data", data, "--data-order", "sequential",
                          "--init-from", weights, "--max-steps", str(STEPS), "--print-every",
                          "1"], check=True, capture_output=True, text=True)
    planned = step_lines(run.stdout)
    return ours, planned, weights, tokens, labels


# Distributed runs compared with JAX directly (not only with our single rank).
# Each strategy on 1x2 unless it names its cluster ("NODESxGPUS:PARALLEL").
DISTRIBUTED = {"tp2": "tp=2", "pp2": "pp=2", "dp2_zero1": "dp=2,zero=1",
               "dp2_zero2": "dp=2,zero=2", "dp2_zero3": "dp=2,zero=3",
               "dp4_hsdp2_zero3": "2x2:zero=3,hsdp=2"}
# Final parameters after STEPS f32 steps against the float64 oracle: elementwise within
# PARAM_RTOL of the tensor's largest magnitude (AdamW's steps are lr-sized, so differences
# stay far below it unless the math differs).
PARAM_RTOL = 1e-4


def mpirun_env():
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")  # CI containers run as root
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def reassemble(files):
    """The full tensors of a multi-rank checkpoint: each rank's file says which part of each
    tensor it holds (`split:<name>` and, for ZeRO-3 parameter shards, `shard:<name>` metadata,
    runtime docs); pipeline stages hold disjoint tensors. Optimizer state is skipped."""
    parts = {}
    shards = {}  # ZeRO-3: a parameter's flat pieces, then the local shape they make
    loaded = []
    for path in files:
        tensors, metadata = read_safetensors(path, with_metadata=True)
        for name, value in list(tensors.items()):
            shard = metadata.get("shard:" + name)
            if name.startswith("optimizer.") or not shard:
                continue
            fields = dict(item.split("=") for item in shard.split(","))
            pieces = shards.setdefault((name, metadata.get("split:" + name)),
                                       [None] * int(fields["parts"]))
            pieces[int(fields["part"])] = (value, [int(d) for d in fields["shape"].split("x")])
            del tensors[name]
        loaded.append((tensors, metadata))
    for (name, split), pieces in shards.items():
        if any(p is None for p in pieces):
            raise ValueError(f"{name}: a ZeRO-3 shard is missing")
        local = np.concatenate([p for p, _ in pieces]).reshape(pieces[0][1])
        loaded.append(({name: local}, {"split:" + name: split} if split else {}))
    for tensors, metadata in loaded:
        for name, value in tensors.items():
            if name.startswith("optimizer."):
                continue
            split = metadata.get("split:" + name)
            if not split:
                parts[name] = value
                continue
            fields = dict(item.split("=") for item in split.split(","))
            dim, count, part = int(fields["dim"]), int(fields["parts"]), int(fields["part"])
            blocks = [int(b) for b in fields["blocks"].split(";")] if "blocks" in fields else None
            parts.setdefault(name, [None] * count)[part] = (value, dim, blocks)
    full = {}
    for name, value in parts.items():
        if not isinstance(value, list):
            full[name] = value
            continue
        if any(p is None for p in value):
            raise ValueError(f"{name}: a tensor-parallel part is missing")
        dim, blocks = value[0][1], value[0][2]
        slices = [v for v, _, _ in value]
        if not blocks:
            full[name] = np.concatenate(slices, axis=dim)
            continue
        pieces, offset = [], 0
        for block in blocks:  # every part holds its slice of each block, in block order
            local = block // len(slices)
            pieces += [np.take(p, range(offset, offset + local), axis=dim) for p in slices]
            offset += local
        full[name] = np.concatenate(pieces, axis=dim)
    return full


def check_distributed(name, cfg, mlperfc, workdir, model, weights, reference, final,
                      strategies=DISTRIBUTED):
    """Trains the model under mpirun with each strategy from the same weights and data as the
    oracle and compares its trajectory and final parameters with JAX."""
    mlperf_run = os.path.join(os.path.dirname(mlperfc), "mlperf-run")
    data = os.path.join(workdir, f"{name}.train.data")  # the stream train_ours wrote
    ok = True
    for tag, strategy in strategies.items():
        cluster, parallel = strategy.split(":") if ":" in strategy else ("1x2", strategy)
        nodes, gpus = (int(n) for n in cluster.split("x"))
        ranks = nodes * gpus
        plan = os.path.join(workdir, f"{name}.{tag}.pb")
        subprocess.run([mlperfc, "compile", model, "--cluster", cluster, "--parallel", parallel,
                        "-o", plan], check=True, capture_output=True)
        checkpoint = os.path.join(workdir, f"{name}.{tag}.final.safetensors")
        run = subprocess.run(["mpirun", "--oversubscribe", "-np", str(ranks), mlperf_run, plan,
                              "--data", data, "--data-order", "sequential", "--init-from",
                              weights, "--max-steps", str(STEPS), "--print-every", "1",
                              "--save", checkpoint],
                             capture_output=True, text=True, env=mpirun_env())
        got = step_lines(run.stdout) if run.returncode == 0 else []
        worst, failures = compare_steps(got, reference)
        if run.returncode != 0:
            failures.append(f"mpirun failed ({run.returncode}): {run.stderr.strip()[-500:]}")
        if len(got) != STEPS and run.returncode == 0:
            failures.append(f"expected {STEPS} steps, got {len(got)}")
        worst_param = float("nan")
        if run.returncode == 0:
            stem = checkpoint[:-len(".safetensors")]
            params = reassemble([f"{stem}.rank{r}-of-{ranks}.safetensors"
                                 for r in range(ranks)])
            worst_param = 0.0
            if sorted(params) != sorted(final):
                failures.append(f"reassembled tensors {sorted(params)[:3]}... are not the "
                                f"model's parameters {sorted(final)[:3]}...")
            for key, ref in final.items():
                if key not in params:
                    continue
                ref = np.asarray(ref)
                if params[key].shape != ref.shape:
                    failures.append(f"{key}: shape {params[key].shape} vs {ref.shape}")
                    continue
                error = float(np.max(np.abs(params[key] - ref)) / np.max(np.abs(ref)))
                worst_param = max(worst_param, error) if np.isfinite(error) else float("inf")
                if not finite_and_within(error, PARAM_RTOL):
                    failures.append(f"final {key}: max diff {error:.1e} of its scale")
        print(f"{name} {tag} under mpirun -np {ranks}: {len(got)} steps, worst rel diff of loss, lr, "
              f"grad_norm vs JAX f64 {worst:.1e}, final parameters {worst_param:.1e} of their "
              f"scale: {'ok' if not failures else 'MISMATCH'}")
        for failure in failures[:10]:
            print("  " + failure)
        ok = ok and not failures
    return ok


def fused_qkv_names(cfg):
    for i in range(cfg["layers"]):
        prefix = f"model.layers.{i}.self_attn."
        yield prefix + "qkv_proj.weight", [prefix + f"{x}_proj.weight" for x in "qkv"]


def unfuse_qkv(params, cfg):
    """The fused declaration's qkv_proj is q | k | v stacked by rows (heads·head_dim,
    kv_heads·head_dim, kv_heads·head_dim): the JAX model reads them as three projections."""
    head_dim = cfg["hidden"] // cfg["heads"]
    sizes = [cfg["heads"] * head_dim, cfg["kv_heads"] * head_dim, cfg["kv_heads"] * head_dim]
    out = dict(params)
    for fused, names in fused_qkv_names(cfg):
        pieces = np.split(np.asarray(out.pop(fused)), np.cumsum(sizes)[:-1], axis=0)
        out.update({n: jnp.asarray(p) for n, p in zip(names, pieces)})
    return out


def check_fused_qkv(cfg, train, mlperfc, workdir):
    """The same model declared with one fused qkv_proj (`fused_qkv=on`, declared as blocks so
    tensor parallelism splits each of q, k, v): run-reference and tp=2 under mpirun against
    JAX, whose weights are the fused tensor's three row blocks."""
    ours, planned, weights, tokens, labels = train_ours(mlperfc, workdir, "gqa_fused.train", cfg,
                                                        train, 99, ",dtype=f32,fused_qkv=on")
    params = unfuse_qkv({k: jnp.asarray(v) for k, v in read_safetensors(weights).items()}, cfg)
    reference = oracle_trajectory(params, tokens, labels, cfg, train)
    final = dict(params)
    for fused, names in fused_qkv_names(cfg):
        final[fused] = np.concatenate([np.asarray(final.pop(n)) for n in names], axis=0)
    _, failures = compare_steps(ours, reference)
    if len(ours) != STEPS or planned != ours:
        failures.append(f"{len(ours)} run-reference steps; mlperf-run bit-identical: "
                        f"{planned == ours}")
    print(f"gqa fused qkv_proj trajectory: loss {ours[0][0]:.4f} -> {ours[-1][0]:.4f} (JAX f64 "
          f"{reference[0][0]:.4f} -> {reference[-1][0]:.4f}): "
          f"{'ok' if not failures else 'MISMATCH'}")
    for failure in failures[:10]:
        print("  " + failure)
    distributed_ok = check_distributed("gqa_fused", cfg, mlperfc, workdir,
                                       os.path.join(workdir, "gqa_fused.train.mlir"), weights,
                                       reference, final, {"tp2": "tp=2"})
    return not failures and distributed_ok


def step_lines(stdout):
    """(loss, lr, grad_norm) of each 'step N loss L lr R grad_norm G ...' line."""
    return [tuple(float(x) for x in line.split()[3:9:2])
            for line in stdout.splitlines() if line.startswith("step ")]


def trajectory_failures(ours, planned, reference):
    """compare_steps of run-reference's steps against the oracle's, plus the step count and
    the plan on the CPU backend, which computes the interpreter's bits: any difference is a
    bug."""
    worst, failures = compare_steps(ours, reference)
    if len(ours) != STEPS:
        failures.append(f"expected {STEPS} steps, got {len(ours)}")
    if planned != ours:
        failures.append(f"mlperf-run on the plan differs from run-reference: {planned[:3]} vs "
                        f"{ours[:3]} ...")
    return worst, failures


def check_trajectory(name, cfg, mlperfc, workdir):
    train = {**TRAIN, **TRAIN_OVERRIDES[name]}
    ours, planned, weights, tokens, labels = train_ours(mlperfc, workdir, f"{name}.train", cfg,
                                                        train, 99, ",dtype=f32")
    params = {k: jnp.asarray(v) for k, v in read_safetensors(weights).items()}
    reference = oracle_trajectory(params, tokens, labels, cfg, train)  # params: now final
    distributed_ok = True
    if name == "gqa":
        distributed_ok = check_distributed(name, cfg, mlperfc, workdir,
                                           os.path.join(workdir, f"{name}.train.mlir"), weights,
                                           reference, params)
        distributed_ok = check_fused_qkv(cfg, train, mlperfc, workdir) and distributed_ok
    clipped = sum(1 for ref in reference if ref[2] > train["clip"])
    worst, failures = trajectory_failures(ours, planned, reference)
    print(f"{name} trajectory: {STEPS} steps (clipped in {clipped}, weight decay on "
          f"{train['weight_decay_params']}), loss {ours[0][0]:.4f} -> {ours[-1][0]:.4f} "
          f"(JAX f64 {reference[0][0]:.4f} -> {reference[-1][0]:.4f}), worst rel diff of loss, "
          f"lr, grad_norm {worst:.1e}; mlperf-run on the plan bit-identical: "
          f"{planned == ours}: {'ok' if not failures else 'MISMATCH'}")
    for failure in failures[:10]:
        print("  " + failure)
    return not failures and distributed_ok


# Adagrad (tg.optimizer name = "adagrad") on the "gqa" model: clipped, every parameter decays,
# the sum starting at a non-zero value, so each term of the update is exercised.
ADAGRAD = dict(eps=1e-8, weight_decay=0.01, initial_accumulator_value=0.1)
# Final parameters and sums after STEPS f32 Adagrad steps against the float64 oracle,
# elementwise within this fraction of the tensor's largest magnitude.
ADAGRAD_RTOL = 1e-6


def check_adagrad(mlperfc, workdir):
    """Trains the tiny Llama with Adagrad through run-reference and mlperf-run (single rank,
    and two ranks with ZeRO-1 sharding the sums) and compares the trajectory, the final
    parameters and the final sums of squares with JAX's Adagrad in float64."""
    name, cfg = "adagrad", CONFIGS["gqa"]
    train = {**TRAIN, **TRAIN_OVERRIDES["gqa"], **ADAGRAD}
    sets = (f",dtype=f32,optimizer=adagrad,adagrad_eps={ADAGRAD['eps']},"
            f"weight_decay={ADAGRAD['weight_decay']},"
            f"initial_accumulator_value={ADAGRAD['initial_accumulator_value']}")
    ours, planned, weights, tokens, labels = train_ours(
        mlperfc, workdir, f"{name}.train", cfg,
        {k: v for k, v in train.items() if k not in ADAGRAD}, 99, sets)
    params = {k: jnp.asarray(v) for k, v in read_safetensors(weights).items()}
    state = {}
    reference = oracle_trajectory(params, tokens, labels, cfg, train, adagrad_update, state)
    worst, failures = trajectory_failures(ours, planned, reference)
    # The final parameters and sums mlperf-run saves, against the oracle's.
    checkpoint = os.path.join(workdir, f"{name}.final.safetensors")
    mlperf_run = os.path.join(os.path.dirname(mlperfc), "mlperf-run")
    subprocess.run([mlperf_run, os.path.join(workdir, f"{name}.train.plan.pb"), "--data",
                    os.path.join(workdir, f"{name}.train.data"), "--data-order", "sequential",
                    "--init-from", weights, "--max-steps", str(STEPS), "--save", checkpoint],
                   check=True, capture_output=True)
    saved = read_safetensors(checkpoint)
    worst_param = worst_sum = 0.0
    for key, ref in params.items():
        for what, got_key, want in (("parameter", key, ref),
                                    ("sum", f"optimizer.sum.{key}", state["sum"][key])):
            if got_key not in saved:
                failures.append(f"the checkpoint has no {got_key}")
                continue
            want = np.asarray(want)
            error = float(np.max(np.abs(saved[got_key] - want)) / np.max(np.abs(want)))
            if what == "parameter":
                worst_param = max(worst_param, error) if np.isfinite(error) else float("inf")
            else:
                worst_sum = max(worst_sum, error) if np.isfinite(error) else float("inf")
            if not finite_and_within(error, ADAGRAD_RTOL):
                failures.append(f"final {what} {key}: max diff {error:.1e} of its scale")
    distributed_ok = check_distributed(name, cfg, mlperfc, workdir,
                                       os.path.join(workdir, f"{name}.train.mlir"), weights,
                                       reference, params,
                                       {"dp2_zero1": DISTRIBUTED["dp2_zero1"]})
    print(f"{name} trajectory: {STEPS} Adagrad steps (eps {train['eps']}, weight decay "
          f"{train['weight_decay']}, sum from {train['initial_accumulator_value']}), loss "
          f"{ours[0][0]:.4f} -> {ours[-1][0]:.4f} (JAX f64 {reference[0][0]:.4f} -> "
          f"{reference[-1][0]:.4f}), worst rel diff of loss, lr, grad_norm {worst:.1e}; final "
          f"parameters {worst_param:.1e}, sums {worst_sum:.1e} of their scale; mlperf-run on "
          f"the plan bit-identical: {planned == ours}: {'ok' if not failures else 'MISMATCH'}")
    for failure in failures[:10]:
        print("  " + failure)
    return not failures and distributed_ok


# VJP rules the Llama models do not exercise: split and concat, matmuls in every transpose
# layout (batched and with a shared rank-2 weight), reshape, mul, scale, silu.
OPS_MODEL = """
tg.model @ops {
  tg.benchmark {name = "llama31_8b", eval_every_samples = 64, eval_samples = 16,
                target_metric = "log_perplexity", target_value = 3.3}
  tg.batch {global_batch_size = 2, micro_batch_size = 2, seq_len = 6}
  tg.optimizer {name = "adamw", beta1 = 0.9, beta2 = 0.95, epsilon = 1.0e-05,
                weight_decay = 0.1, weight_decay_params = "all", clip_grad_norm = 1.0}
  tg.lr_schedule {kind = "cosine_with_linear_warmup", base_lr = 1.0e-03, end_lr = 1.0e-04,
                  warmup_steps = 2, decay_steps = 8, max_steps = 10}
  tg.param @embed : tensor<12x8xf32> {init = "normal", std = 0.5}
  tg.param @w : tensor<8x8xf32> {init = "normal", std = 0.5}
  func.func @forward(%tokens: tensor<2x6xi32>, %labels: tensor<2x6xi32>) -> tensor<f32> {
    %e = tg.param_ref @embed : tensor<12x8xf32>
    %w = tg.param_ref @w : tensor<8x8xf32>
    %h = tg.embedding %e, %tokens : tensor<12x8xf32>, tensor<2x6xi32> -> tensor<2x6x8xf32>
    %a, %b = tg.split %h {dim = 2 : i64, sizes = array<i64: 3, 5>}
        : tensor<2x6x8xf32> -> tensor<2x6x3xf32>, tensor<2x6x5xf32>
    %c0 = tg.concat %b, %a {dim = 2 : i64} : tensor<2x6x5xf32>, tensor<2x6x3xf32> -> tensor<2x6x8xf32>
    %whole = tg.split %c0 {dim = 1 : i64, sizes = array<i64: 6>} : tensor<2x6x8xf32> -> tensor<2x6x8xf32>
    %c = tg.concat %whole {dim = 0 : i64} : tensor<2x6x8xf32> -> tensor<2x6x8xf32>
    %p = tg.matmul %c, %w : tensor<2x6x8xf32>, tensor<8x8xf32> -> tensor<2x6x8xf32>
    %q = tg.matmul %p, %c {transpose_lhs} : tensor<2x6x8xf32>, tensor<2x6x8xf32> -> tensor<2x8x8xf32>
    %r = tg.matmul %q, %c {transpose_lhs, transpose_rhs} : tensor<2x8x8xf32>, tensor<2x6x8xf32> -> tensor<2x8x6xf32>
    %s = tg.transpose %r {permutation = array<i64: 0, 2, 1>} : tensor<2x8x6xf32> -> tensor<2x6x8xf32>
    %t = tg.matmul %s, %q : tensor<2x6x8xf32>, tensor<2x8x8xf32> -> tensor<2x6x8xf32>
    %u = tg.mul %t, %p : tensor<2x6x8xf32>
    %flat = tg.reshape %u : tensor<2x6x8xf32> -> tensor<12x8xf32>
    %half = tg.scale %flat {factor = 0.05 : f64} : tensor<12x8xf32>
    %back = tg.reshape %half : tensor<12x8xf32> -> tensor<2x6x8xf32>
    %act = tg.silu %back : tensor<2x6x8xf32>
    %logits = tg.matmul %act, %e {transpose_rhs} : tensor<2x6x8xf32>, tensor<12x8xf32> -> tensor<2x6x12xf32>
    %loss = tg.cross_entropy %logits, %labels : tensor<2x6x12xf32>, tensor<2x6xi32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
"""


def ops_loss(params, tokens, labels):
    e, w = params["embed"], params["w"]
    h = e[tokens]
    c = jnp.concatenate([h[..., 3:], h[..., :3]], axis=-1)
    p = c @ w
    q = jnp.swapaxes(p, 1, 2) @ c
    r = jnp.swapaxes(q, 1, 2) @ jnp.swapaxes(c, 1, 2)
    t = jnp.swapaxes(r, 1, 2) @ q
    act = jax.nn.silu((t * p) * 0.05)
    log_probs = jax.nn.log_softmax(act @ e.T, axis=-1)
    return -jnp.mean(jnp.take_along_axis(log_probs, labels[..., None], axis=-1))


def check_ops(mlperfc, workdir):
    model = os.path.join(workdir, "ops.mlir")
    with open(model, "w") as f:
        f.write(OPS_MODEL)
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, 12, size=(2, 6), dtype=np.int64)
    labels = rng.integers(0, 12, size=(2, 6), dtype=np.int64)
    batch = os.path.join(workdir, "ops.batch.safetensors")
    write_safetensors(batch, {"tokens": tokens, "labels": labels})
    weights = os.path.join(workdir, "ops.weights.safetensors")
    out = os.path.join(workdir, "ops.out.safetensors")
    subprocess.run([mlperfc, "run-reference", model, "--seed", "5", "--save-params", weights,
                    "--inputs", batch, "--function", "forward_backward", "-o", out],
                   check=True, capture_output=True)
    params = {k: jnp.asarray(v) for k, v in read_safetensors(weights).items()}
    ours = read_safetensors(out)
    loss, grads = jax.value_and_grad(ops_loss)(params, jnp.asarray(tokens), jnp.asarray(labels))
    return compare("ops", ours, float(loss), grads)


def compare(name, ours, loss, grads):
    failures = []
    loss_error = abs(ours["loss"].item() - loss) / abs(loss)
    if not finite_and_within(loss_error, LOSS_RTOL):
        failures.append(f"loss {ours['loss'].item()} vs {loss} (rel {loss_error:.2e})")
    worst = 0.0
    for param, ref in grads.items():
        ref = np.asarray(ref)
        got = ours[f"grad.{param}"]
        scale = np.max(np.abs(ref))
        bound = ATOL * scale + RTOL * np.abs(ref)
        worst = max(worst, float(np.max(np.abs(got - ref)) / max(scale, 1e-30)))
        if not np.all(np.isfinite(got)) or not np.all(np.abs(got - ref) <= bound):
            failures.append(f"grad of {param}: max |diff| {np.max(np.abs(got - ref)):.3e}, "
                            f"scale {scale:.3e}")
    print(f"{name}: loss {ours['loss'].item():.9f} (JAX f64 {loss:.9f}, rel "
          f"{loss_error:.1e}); {len(grads)} gradients, worst |diff|/max|ref| {worst:.1e}: "
          f"{'ok' if not failures else 'MISMATCH'}")
    for failure in failures:
        print("  " + failure)
    return not failures


# A bf16 run (the reference precision) rounds every activation, gradient and parameter to
# bf16 while the oracle computes in float64 from the same (bf16) initial weights, so it is
# compared loosely: measured 1e-4 (loss) and 2.4e-3 (gradient norm) over 20 steps; a broken
# bf16 path (a misplaced conversion, gradients accumulated in the wrong type) moves them far
# more than these bounds.
BF16_LOSS_RTOL = 1e-3
BF16_NORM_RTOL = 3e-2


def check_bf16_and_init(mlperfc, workdir):
    name, cfg = "gqa", CONFIGS["gqa"]
    train = {**TRAIN, **TRAIN_OVERRIDES[name]}
    ours, planned, weights, tokens, labels = train_ours(mlperfc, workdir, "bf16", cfg, train, 42)
    drawn = read_safetensors(weights)
    failures = []

    # Initialization: drawn in bf16; ones for norms; normal(0, 0.02), and 0.02/sqrt(2 layers)
    # for the output projections (shared/reference/MLPERF.md).
    layers = cfg["layers"]
    for param, values in drawn.items():
        if not np.array_equal(values, values.astype(ml_dtypes.bfloat16).astype(np.float64)):
            failures.append(f"init of {param}: values are not bf16")
        if "norm" in param:
            if not np.all(values == 1.0):
                failures.append(f"init of {param}: not all ones")
            continue
        std = 0.02 / np.sqrt(2 * layers) if ("o_proj" in param or "down_proj" in param) else 0.02
        measured = float(np.std(values))
        if abs(measured - std) > 0.1 * std or abs(float(np.mean(values))) > 0.1 * std:
            failures.append(f"init of {param}: mean {np.mean(values):.2e}, std {measured:.4e}, "
                            f"expected std {std:.4e}")

    params = {k: jnp.asarray(v) for k, v in drawn.items()}
    reference = oracle_trajectory(params, tokens, labels, cfg, train)
    worst_loss = worst_norm = 0.0
    for step, (got, ref) in enumerate(zip(ours, reference)):
        loss_error = abs(got[0] - ref[0]) / ref[0]
        norm_error = abs(got[2] - ref[2]) / ref[2]
        worst_loss = max(worst_loss, loss_error) if np.isfinite(loss_error) else float("inf")
        worst_norm = max(worst_norm, norm_error) if np.isfinite(norm_error) else float("inf")
        if not finite_and_within(loss_error, BF16_LOSS_RTOL):
            failures.append(f"bf16 step {step} loss {got[0]} vs {ref[0]} (rel {loss_error:.1e})")
        if not finite_and_within(norm_error, BF16_NORM_RTOL):
            failures.append(f"bf16 step {step} grad_norm {got[2]} vs {ref[2]}")
    if len(ours) != STEPS:
        failures.append(f"expected {STEPS} bf16 steps, got {len(ours)}")
    if planned != ours:
        failures.append(f"bf16: mlperf-run on the plan differs from run-reference: "
                        f"{planned[:3]} vs {ours[:3]} ...")
    print(f"bf16 trajectory and init: {len(drawn)} parameters drawn in bf16 with the declared "
          f"statistics; {STEPS} bf16 steps, loss {ours[0][0]:.4f} -> {ours[-1][0]:.4f} (JAX f64 "
          f"{reference[0][0]:.4f} -> {reference[-1][0]:.4f}), worst rel diff loss "
          f"{worst_loss:.1e}, grad_norm {worst_norm:.1e}: {'ok' if not failures else 'MISMATCH'}")
    for failure in failures[:10]:
        print("  " + failure)
    return not failures


def check_config(name, cfg, mlperfc, workdir):
    cfg = {k: v for k, v in cfg.items() if k != "gbs"}
    sets = ",".join(f"{k}={v}" for k, v in cfg.items())
    model = os.path.join(workdir, f"{name}.mlir")
    subprocess.run([mlperfc, "emit-model", "llama3", "--set", sets + ",dtype=f32", "-o", model],
                   check=True, capture_output=True)
    rng = np.random.default_rng(20261130)
    shape = (cfg["micro_batch"], cfg["seq"])
    tokens = rng.integers(0, cfg["vocab"], size=shape, dtype=np.int64)
    labels = rng.integers(0, cfg["vocab"], size=shape, dtype=np.int64)
    batch = os.path.join(workdir, f"{name}.batch.safetensors")
    write_safetensors(batch, {"tokens": tokens, "labels": labels})
    weights = os.path.join(workdir, f"{name}.weights.safetensors")
    out = os.path.join(workdir, f"{name}.out.safetensors")
    subprocess.run([mlperfc, "run-reference", model, "--seed", "1234", "--save-params", weights,
                    "--inputs", batch, "--function", "forward_backward", "-o", out],
                   check=True, capture_output=True)

    params = {k: jnp.asarray(v) for k, v in read_safetensors(weights).items()}
    ours = read_safetensors(out)
    loss, grads = jax.value_and_grad(loss_fn)(params, jnp.asarray(tokens), jnp.asarray(labels),
                                              cfg)
    return compare(name, ours, float(loss), grads)


def run_and_report(run_all, keep):
    """Runs run_all(workdir), a list of pass/fail results, in `keep` (its files kept) or a
    temporary directory; prints the tally and exits 0 when every check passed."""
    if keep:
        os.makedirs(keep, exist_ok=True)
        results = run_all(keep)
    else:
        with tempfile.TemporaryDirectory() as workdir:
            results = run_all(workdir)
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if all(results) else 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mlperfc", required=True)
    parser.add_argument("--keep", help="keep the files in this directory")
    args = parser.parse_args()
    def run_all(workdir):
        results = [check_ops(args.mlperfc, workdir), check_bf16_and_init(args.mlperfc, workdir),
                   check_adagrad(args.mlperfc, workdir)]
        for n, c in CONFIGS.items():
            results.append(check_config(n, c, args.mlperfc, workdir))
            results.append(check_trajectory(n, c, args.mlperfc, workdir))
        return results

    run_and_report(run_all, args.keep)


if __name__ == "__main__":
    main()
