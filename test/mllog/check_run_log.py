"""Trains the tiny Llama to its target with mlperf-run and runs the official MLPerf checker
(PyPI mlperf-logging, training 6.0.0 rules, closed division) on the log it wrote.

A reduced model cannot meet the closed llama31_8b rules that pin the benchmark's own
hyperparameters (sequence length 8192, 1,200,000 steps, 1024 eval samples, the 3.3 quality
target), and the log states its real values, so the checker must fail exactly those checks and
nothing else: every structural rule (required keys, init/run/block/eval intervals,
samples_count, seeds with file and line, submission keys) has to pass.

Usage: check_run_log.py BINDIR SOURCEDIR WORKDIR
"""
import os
import re
import subprocess
import sys

# The closed llama31_8b checks a reduced model fails by construction (by key).
REDUCED_MODEL_KEYS = {"max_sequence_length", "opt_learning_rate_decay_steps", "max_steps",
                      "eval_samples", "eval_accuracy", "opt_base_learning_rate",
                      "opt_learning_rate_warmup_steps", "global_batch_size"}


def run(*command, **kwargs):
    print("+ " + " ".join(command), flush=True)
    return subprocess.run(command, check=True, **kwargs)


def main():
    bindir, sourcedir, workdir = sys.argv[1:4]
    os.makedirs(workdir, exist_ok=True)
    text, data = os.path.join(workdir, "text.txt"), os.path.join(workdir, "text")
    model, plan = os.path.join(workdir, "tiny.mlir"), os.path.join(workdir, "tiny.pb")
    log = os.path.join(workdir, "run.log")
    run(sys.executable, os.path.join(sourcedir, "test/tools/mlperfc/Inputs/make_text.py"), text)
    run(os.path.join(bindir, "mlperf-prepare-data"), "--output", data, text)
    run(os.path.join(bindir, "mlperfc"), "emit-model", "llama3", "--preset", "llama31_8b_tiny",
        "--set", "gbs=8,micro_batch=4,lr=3e-3,warmup_steps=2,max_steps=40,eval_every=16,"
        "eval_samples=8,target=4.5", "-o", model)
    run(os.path.join(bindir, "mlperfc"), "compile", model, "-o", plan, stdout=subprocess.DEVNULL)
    # Exit status 0: the target was reached.
    run(os.path.join(bindir, "mlperf-run"), plan, "--data", data, "--eval-data", data, "--seed",
        "3", "--mllog", log, "--print-every", "0")
    checker = subprocess.run(
        [sys.executable, "-m", "mlperf_logging.compliance_checker", "--usage", "training",
         "--ruleset", "6.0.0", "--log_output", os.path.join(workdir, "checker.log"), log],
        capture_output=True, text=True, cwd=workdir)
    output = checker.stdout + checker.stderr
    if "closed_llama31_8b.yaml" not in output:
        sys.exit("the checker did not apply the closed llama31_8b rules:\n" + output)
    failed = set(re.findall(r"CHECK for '(\w+)' failed", output))
    failed |= set(re.findall(r"Failed checks for (\w+)", output))
    # Verdict lines (the detail lines under a failed CHECK repeat its key's test).
    verdicts = [line for line in output.splitlines()
                if re.match(r"(WARNING|ERROR)\b", line) or "CHECK for" in line
                or "Failed checks" in line or "Required" in line or "not found" in line]
    other = [line for line in verdicts if "ERROR - FAILED" not in line
             and not any(f"'{key}'" in line or f"for {key} " in line
                         for key in REDUCED_MODEL_KEYS)]
    unexpected = failed - REDUCED_MODEL_KEYS
    print(f"checker: failed only on the reduced model's own hyperparameters "
          f"{sorted(failed)}" if not unexpected and not other else output)
    if unexpected or other:
        sys.exit(f"unexpected checker failures: {sorted(unexpected)} {other}")
    if "eval_accuracy" not in open(log).read() or '"status": "success"' not in open(log).read():
        sys.exit("the log lacks eval_accuracy or a successful run_stop")


if __name__ == "__main__":
    main()
