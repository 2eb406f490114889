"""Runs the official MLPerf checker (PyPI mlperf-logging, training rules 6.0.0) on a log
written by mlperf-run and prints its verdict.

With --reduced-model the log comes from a reduced variant of a benchmark (the tiny Llama of
the quickstart and tests). Such a run states its real hyperparameters, so the closed rules that
pin the benchmark's own values (sequence length 8192, 1,200,000 steps, 1024 eval samples, the
quality target, ...) fail by construction; those checks are listed and allowed, and every
other rule (required keys, init/run/block/eval intervals, samples_count, seeds with file and
line, submission keys) must pass. Without it, the log must pass the checker outright.

Usage: check_mllog.py [--reduced-model] LOG
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# The closed-division checks of a benchmark's own hyperparameters (by log key).
BENCHMARK_PINNED_KEYS = {"max_sequence_length", "opt_learning_rate_decay_steps", "max_steps",
                         "eval_samples", "eval_accuracy", "opt_base_learning_rate",
                         "opt_learning_rate_warmup_steps", "global_batch_size",
                         "gradient_accumulation_steps", "opt_end_learning_rate"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log")
    parser.add_argument("--reduced-model", action="store_true",
                        help="allow the failures of the benchmark's pinned hyperparameters")
    args = parser.parse_args()
    status, message = check_log(args.log, args.reduced_model)
    print(message)
    return status


def check_log(path, reduced_model=False):
    """(exit status, verdict) of the official checker on the log at `path`; the verdict
    holds the checker's output when it failed."""
    log = os.path.abspath(path)
    with tempfile.TemporaryDirectory() as workdir:
        checker = subprocess.run(
            [sys.executable, "-m", "mlperf_logging.compliance_checker", "--usage", "training",
             "--ruleset", "6.0.0", "--log_output", os.path.join(workdir, "checker.log"), log],
            capture_output=True, text=True, cwd=workdir)
    output = checker.stdout + checker.stderr
    if checker.returncode == 0:
        return 0, f"check_mllog: {path}: the MLPerf checker passed"
    if not reduced_model or "Compliance checks:" not in output:
        return 1, f"{output}\ncheck_mllog: {path}: the MLPerf checker FAILED"
    failed = set(re.findall(r"CHECK for '(\w+)' failed", output))
    failed |= set(re.findall(r"Failed checks for (\w+)", output))
    # Verdict lines; the detail lines under a failed CHECK repeat its key's test.
    verdicts = [line for line in output.splitlines()
                if re.match(r"(WARNING|ERROR)\b", line) or "CHECK for" in line
                or "Failed checks" in line or "Required" in line or "not found" in line]
    other = [line for line in verdicts if "ERROR - FAILED" not in line
             and not any(f"'{key}'" in line or f"for {key} " in line
                         for key in BENCHMARK_PINNED_KEYS)]
    unexpected = sorted(failed - BENCHMARK_PINNED_KEYS)
    if unexpected or other:
        return 1, (f"{output}\ncheck_mllog: {path}: the MLPerf checker FAILED beyond the "
                   f"reduced model's pinned hyperparameters: {unexpected} {other}")
    return 0, (f"check_mllog: {path}: the MLPerf checker passed every rule except the "
               f"benchmark's pinned hyperparameters, which a reduced model differs in: "
               f"{', '.join(sorted(failed))}")


if __name__ == "__main__":
    sys.exit(main())
