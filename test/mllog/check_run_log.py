"""Trains the tiny Llama to its target with mlperf-run and runs the official MLPerf checker
(PyPI mlperf-logging, training 6.0.0 rules, closed division) on the log it wrote, with the
submission fields given on the command line; checks that they are logged as given and that
no line names a path of the machine that built the tools.

A reduced model cannot meet the closed llama31_8b rules that pin the benchmark's own
hyperparameters and the log states its real values, so scripts/check_mllog.py --reduced-model
allows exactly those checks to fail; every structural rule has to pass.

Usage: check_run_log.py BINDIR SOURCEDIR WORKDIR
"""
import json
import os
import subprocess
import sys

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
        "3", "--mllog", log, "--print-every", "0", "--submission-org", "Example Org",
        "--submission-platform", "example_1xcpu", "--submission-status", "research")
    run(sys.executable, os.path.join(sourcedir, "scripts/check_mllog.py"), "--reduced-model", log)
    if "eval_accuracy" not in open(log).read() or '"status": "success"' not in open(log).read():
        sys.exit("the log lacks eval_accuracy or a successful run_stop")
    # The submission fields as given, and no path of the build machine in any line.
    events = [json.loads(line.split(":::MLLOG ", 1)[1]) for line in open(log)
              if line.startswith(":::MLLOG ")]
    values = {e["key"]: e["value"] for e in events if e["key"].startswith("submission_")}
    expected = {"submission_org": "Example Org", "submission_platform": "example_1xcpu",
                "submission_division": "closed", "submission_status": "research",
                "submission_benchmark": "llama31_8b"}
    if values != expected:
        sys.exit(f"submission keys {values}, expected {expected}")
    # The system's scale, as the result summarizer reads it.
    scale = {e["key"]: e["value"] for e in events
             if e["key"] in ("number_of_nodes", "accelerators_per_node")}
    if scale != {"number_of_nodes": 1, "accelerators_per_node": 1}:
        sys.exit(f"system scale {scale}, expected 1 node of 1 accelerator")
    absolute = {e["metadata"]["file"] for e in events if e["metadata"]["file"].startswith("/")}
    if absolute or sourcedir in open(log).read():
        sys.exit(f"the log names the build machine's paths: {sorted(absolute)[:3]}")


if __name__ == "__main__":
    main()
