"""Checks mlperfc's reference execution against an independent Llama 3.1 in JAX.

The JAX model below is written from the Llama 3.1 / MLPerf reference semantics (GQA, RoPE with
Llama 3.1 frequency scaling, RMSNorm, SwiGLU, untied head, mean token cross-entropy), not from
mlperfc's code, and runs in float64. For each tiny configuration it:
  1. writes the declaration with `mlperfc emit-model` (fp32 parameters and activations),
  2. has `mlperfc run-reference` draw the initial weights (Philox) and write them as
     safetensors, and compute the loss and every parameter gradient of one micro-batch,
  3. reads the same weights with its own safetensors reader, computes the loss and gradients
     with jax.value_and_grad, and compares: |ours - ref| <= ATOL * max|ref| + RTOL * |ref|
     elementwise for every gradient, and the loss to LOSS_RTOL.

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

CONFIGS = {
    # Grouped-query attention (kv_heads < heads) and two sequences per micro-batch.
    "gqa": dict(layers=2, hidden=64, heads=4, kv_heads=2, ffn=160, vocab=256, seq=32,
                micro_batch=2),
    # Multi-head attention (kv_heads == heads), three layers, odd sizes.
    "mha": dict(layers=3, hidden=48, heads=3, kv_heads=3, ffn=128, vocab=96, seq=16,
                micro_batch=1),
}
THETA, FACTOR, LOW, HIGH, ORIGINAL = 500000.0, 8.0, 1.0, 4.0, 8192
EPS = 1e-5

DTYPES = {"F32": np.float32, "F64": np.float64, "BF16": ml_dtypes.bfloat16,
          "I32": np.int32, "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    body = data[8 + size:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        array = np.frombuffer(body[begin:end], dtype=DTYPES[entry["dtype"]])
        out[name] = array.reshape(entry["shape"]).astype(np.float64 if array.dtype.kind == "f"
                                                         or entry["dtype"] == "BF16" else np.int64)
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


def check_config(name, cfg, mlperfc, workdir):
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
    failures = []
    loss_error = abs(ours["loss"].item() - float(loss)) / abs(float(loss))
    if loss_error > LOSS_RTOL:
        failures.append(f"loss {ours['loss'].item()} vs {float(loss)} (rel {loss_error:.2e})")
    worst = 0.0
    for param, ref in grads.items():
        ref = np.asarray(ref)
        got = ours[f"grad.{param}"]
        scale = np.max(np.abs(ref))
        bound = ATOL * scale + RTOL * np.abs(ref)
        excess = np.max(np.abs(got - ref) - bound)
        worst = max(worst, float(np.max(np.abs(got - ref)) / max(scale, 1e-30)))
        if excess > 0:
            failures.append(f"grad of {param}: max |diff| {np.max(np.abs(got - ref)):.3e}, "
                            f"scale {scale:.3e}")
    print(f"{name}: loss {ours['loss'].item():.9f} (JAX f64 {float(loss):.9f}, rel "
          f"{loss_error:.1e}); {len(grads)} gradients, worst |diff|/max|ref| {worst:.1e}: "
          f"{'ok' if not failures else 'MISMATCH'}")
    for failure in failures:
        print("  " + failure)
    return not failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mlperfc", required=True)
    parser.add_argument("--keep", help="keep the files in this directory")
    args = parser.parse_args()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        results = [check_config(n, c, args.mlperfc, args.keep) for n, c in CONFIGS.items()]
    else:
        with tempfile.TemporaryDirectory() as workdir:
            results = [check_config(n, c, args.mlperfc, workdir) for n, c in CONFIGS.items()]
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
