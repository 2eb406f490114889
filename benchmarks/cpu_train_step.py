"""Benchmark: one fp32 training step (forward, backward, AdamW) of Llama 3.1-structured models
on mlperfc's CPU reference (`mlperfc run-reference --train-steps`) against JAX on the same
machine, in the same run, with the same threads and precision.

Usage: .venv/bin/python benchmarks/cpu_train_step.py [--mlperfc build/bin/mlperfc] [--steps 4]
           [--baseline-mlperf-run OLD/bin/mlperf-run]

The plan, JAX (and the baseline) are measured in alternating rounds (--rounds, default 3) and
each reports the median of its rounds, so a slow spell of this shared machine does not land on
one side only. With --baseline-mlperf-run, the same plans also run on that (older) mlperf-run,
for before/after ratios; plans are read by both as long as the plan format is the same. The
last row is the quickstart's bf16 tiny model (scripts/quickstart.sh), mlperf-run only.

Both sides train on the same tokens from the same weights; each reports the median step time
over steps after the first (JAX's first step compiles). The models are the "tiny" and "mid"
configurations of shared/reference/HARDWARE.md.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "oracle"))
import llama_oracle as oracle  # noqa: E402  (the JAX Llama and safetensors helpers)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", False)  # fp32, like our fp32 run

CONFIGS = {
    "tiny": dict(layers=2, hidden=64, heads=4, kv_heads=2, ffn=160, vocab=256, seq=32,
                 micro_batch=8, gbs=8),
    "mid": dict(layers=4, hidden=512, heads=8, kv_heads=2, ffn=1408, vocab=256, seq=256,
                micro_batch=8, gbs=8),
}


def ours(mlperfc, cfg, steps, workdir, name):
    model = os.path.join(workdir, f"{name}.mlir")
    sets = ",".join(f"{k}={v}" for k, v in cfg.items())
    subprocess.run([mlperfc, "emit-model", "llama3", "--set",
                    sets + ",dtype=f32,lr=1e-3,warmup_steps=10,max_steps=100", "-o", model],
                   check=True, capture_output=True)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, cfg["vocab"], size=(steps, cfg["gbs"], cfg["seq"]), dtype=np.int64)
    labels = rng.integers(0, cfg["vocab"], size=tokens.shape, dtype=np.int64)
    batches = os.path.join(workdir, f"{name}.batches.safetensors")
    oracle.write_safetensors(batches, {"tokens": tokens, "labels": labels})
    weights = os.path.join(workdir, f"{name}.weights.safetensors")
    run = subprocess.run([mlperfc, "run-reference", model, "--precision", "fp32",
                          "--save-params", weights, "--inputs", batches, "--train-steps",
                          str(steps)], check=True, capture_output=True, text=True)
    times = [float(line.split()[-1]) / 1e3 for line in run.stdout.splitlines()
             if line.startswith("step ")]
    return float(np.median(times[1:])), weights, tokens, labels, model


def ours_plan(mlperfc, cfg, steps, workdir, name, model, weights, mlperf_run=None,
              precision="fp32"):
    """The same steps through the product path: compile -> plan.pb -> mlperf-run (CPU
    backend), on a one-document dataset of random tokens, from the same weights."""
    plan = os.path.join(workdir, f"{name}.{precision}.plan.pb")
    subprocess.run([mlperfc, "compile", model, "--precision", precision, "-o", plan],
                   check=True, capture_output=True)
    data = os.path.join(workdir, f"{name}.data")
    rng = np.random.default_rng(1)
    oracle.write_megatron(data, rng.integers(0, cfg["vocab"],
                                             size=steps * cfg["gbs"] * cfg["seq"] + 1))
    mlperf_run = mlperf_run or os.path.join(os.path.dirname(mlperfc), "mlperf-run")
    init = ["--init-from", weights] if weights else []
    run = subprocess.run([mlperf_run, plan, "--data", data, "--data-order", "sequential",
                          *init, "--max-steps", str(steps), "--print-every", "1"],
                         check=True, capture_output=True, text=True)
    times = [float(line.split()[-1]) / 1e3 for line in run.stdout.splitlines()
             if line.startswith("step ")]
    return float(np.median(times[1:]))


def jax_step_time(cfg, weights, tokens, labels):
    params = {k: jnp.asarray(v, dtype=jnp.float32)
              for k, v in oracle.read_safetensors(weights).items()}
    m = {k: jnp.zeros_like(v) for k, v in params.items()}
    v = {k: jnp.zeros_like(x) for k, x in params.items()}

    @jax.jit
    def step(params, m, v, tokens, labels, t):
        loss, grads = jax.value_and_grad(oracle.loss_fn)(params, tokens, labels, cfg)
        norm = jnp.sqrt(sum(jnp.sum(g * g) for g in grads.values()))
        clip = jnp.minimum(1.0, 1.0 / (norm + 1e-6))
        new_p, new_m, new_v = {}, {}, {}
        for k in params:
            g = grads[k] * clip
            new_m[k] = 0.9 * m[k] + 0.1 * g
            new_v[k] = 0.95 * v[k] + 0.05 * g * g
            m_hat = new_m[k] / (1 - 0.9 ** t)
            v_hat = new_v[k] / (1 - 0.95 ** t)
            new_p[k] = params[k] - 1e-3 * (m_hat / (jnp.sqrt(v_hat) + 1e-5) + 0.1 * params[k])
        return loss, new_p, new_m, new_v

    times = []
    for s in range(tokens.shape[0]):
        start = time.perf_counter()
        loss, params, m, v = step(params, m, v, jnp.asarray(tokens[s]), jnp.asarray(labels[s]),
                                  float(s + 1))
        loss.block_until_ready()
        times.append(time.perf_counter() - start)
    return float(np.median(times[1:]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mlperfc", default="build/bin/mlperfc")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternate mlperf-run, JAX (and the baseline) this many times; "
                             "each reports the median of its rounds' medians")
    parser.add_argument("--baseline-mlperf-run", default=None)
    args = parser.parse_args()
    base = args.baseline_mlperf_run
    print(f"machine: {os.cpu_count()} CPU threads; JAX {jax.__version__} on {jax.devices()[0]}; "
          f"fp32; median step time over steps 2..{args.steps}, median of {args.rounds} "
          f"alternating rounds (this machine's speed drifts by 20-30%)")
    print(f"{'model':6} {'reference (s)':>14} {'mlperf-run (s)':>15} {'JAX (s)':>10} "
          f"{'ratios':>14}" + (f" {'baseline mlperf-run (s)':>24} {'ratio':>7}" if base else ""))

    def rounds(measurements):
        """Runs each measurement once per round, in turn; the median of each's rounds."""
        times = [[] for _ in measurements]
        for _ in range(args.rounds):
            for i, measure in enumerate(measurements):
                times[i].append(measure())
        return [float(np.median(t)) for t in times], times

    with tempfile.TemporaryDirectory() as workdir:
        for name, cfg in CONFIGS.items():
            ours_s, weights, tokens, labels, model = ours(args.mlperfc, cfg, args.steps,
                                                          workdir, name)
            measurements = [
                lambda: ours_plan(args.mlperfc, cfg, args.steps, workdir, name, model, weights),
                lambda: jax_step_time(cfg, weights, tokens, labels)]
            if base:
                measurements.append(lambda: ours_plan(args.mlperfc, cfg, args.steps, workdir,
                                                      name, model, weights, base))
            medians, _ = rounds(measurements)
            plan_s, jax_s = medians[0], medians[1]
            line = (f"{name:6} {ours_s:14.4f} {plan_s:15.4f} {jax_s:10.4f} "
                    f"{ours_s / jax_s:6.2f}x {plan_s / jax_s:6.2f}x")
            if base:
                line += f" {medians[2]:24.4f} {medians[2] / jax_s:6.2f}x"
            print(line, flush=True)
        # The quickstart's model and batch, in bf16 (its default precision): mlperf-run only.
        quick = os.path.join(workdir, "quickstart.mlir")
        subprocess.run([args.mlperfc, "emit-model", "llama3", "--preset", "llama31_8b_tiny",
                        "--set", "gbs=16,micro_batch=16,lr=3e-3,warmup_steps=10,max_steps=400",
                        "-o", quick], check=True, capture_output=True)
        steps = max(args.steps, 12)
        qcfg = {"vocab": 256, "seq": 32, "gbs": 16}
        measurements = [lambda: ours_plan(args.mlperfc, qcfg, steps, workdir, "quickstart", quick,
                                          None, precision="bf16")]
        if base:
            measurements.append(lambda: ours_plan(args.mlperfc, qcfg, steps, workdir,
                                                  "quickstart", quick, None, base,
                                                  precision="bf16"))
        medians, times = rounds(measurements)
        line = (f"quickstart bf16 step (mlperf-run): {medians[0] * 1e3:.1f} ms "
                f"(rounds {', '.join(f'{t * 1e3:.1f}' for t in times[0])})")
        if base:
            line += (f"; baseline {medians[1] * 1e3:.1f} ms (rounds "
                     f"{', '.join(f'{t * 1e3:.1f}' for t in times[1])}): "
                     f"{medians[1] / medians[0]:.2f}x faster now")
        print(line)


if __name__ == "__main__":
    main()
