"""Trains the tiny Llama (and the tiny GPT-OSS-20B) to its target with mlperf-run and runs the
official MLPerf checker (PyPI mlperf-logging, training 6.0.0 rules, closed division) on the
logs it wrote, with the
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

    # The same for the tiny gpt_oss_20b declaration (mixture of experts, sliding window, the
    # end-of-document loss mask) against the checker's closed_gpt_oss_20b rules.
    moe_model, moe_plan = os.path.join(workdir, "gpt_oss.mlir"), os.path.join(workdir, "gpt_oss.pb")
    moe_log = os.path.join(workdir, "gpt_oss.log")
    run(os.path.join(bindir, "mlperfc"), "emit-model", "gpt-oss", "--preset", "gpt_oss_20b_tiny",
        "--set", "gbs=8,micro_batch=4,lr=3e-3,warmup_steps=2,max_steps=40,eval_every=16,"
        "eval_samples=8,target=4.5", "-o", moe_model)
    run(os.path.join(bindir, "mlperfc"), "compile", moe_model, "-o", moe_plan,
        stdout=subprocess.DEVNULL)
    run(os.path.join(bindir, "mlperf-run"), moe_plan, "--data", data, "--eval-data", data,
        "--seed", "3", "--mllog", moe_log, "--print-every", "0", "--submission-org",
        "Example Org", "--submission-platform", "example_1xcpu", "--submission-status",
        "research")
    run(sys.executable, os.path.join(sourcedir, "scripts/check_mllog.py"), "--reduced-model",
        moe_log)
    moe_events = [json.loads(line.split(":::MLLOG ", 1)[1]) for line in open(moe_log)
                  if line.startswith(":::MLLOG ")]
    logged = {e["key"]: e["value"] for e in moe_events}
    if logged.get("submission_benchmark") != "gpt_oss_20b" or logged.get("opt_name") != "adamw":
        sys.exit(f"the gpt_oss_20b log names {logged.get('submission_benchmark')} and "
                 f"{logged.get('opt_name')}")


if __name__ == "__main__":
    main()
