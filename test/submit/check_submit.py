"""scripts/mlperf_submit.py end to end: a package of tiny-model runs filed, described, checked
by MLCommons' package checker and RCP checker (PyPI mlperf-logging) and scored; a campaign
continued; missing system fields, unconverged runs and bad options reported; and the score
against the rules' arithmetic on a package whose convergence is set by hand (olympic average,
RCP normalisation from the official llama31_8b RCP file), computed here independently.

Usage: check_submit.py BINDIR SOURCEDIR WORKDIR
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys


def run(*command, expect=0, **kwargs):
    print("+ " + " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    output = result.stdout + result.stderr
    if result.returncode != expect:
        print(output)
        sys.exit(f"exit status {result.returncode}, expected {expect}: {' '.join(command)}")
    return output


def expect_in(output, *needles):
    for needle in needles:
        if needle not in output:
            print(output)
            sys.exit(f"missing from the output: {needle!r}")


def tiny_package(bindir, sourcedir, workdir):
    submit = [sys.executable, os.path.join(sourcedir, "scripts/mlperf_submit.py")]
    text, data = os.path.join(workdir, "text.txt"), os.path.join(workdir, "text")
    model, plan = os.path.join(workdir, "tiny.mlir"), os.path.join(workdir, "tiny.pb")
    run(sys.executable, os.path.join(sourcedir, "test/tools/mlperfc/Inputs/make_text.py"), text)
    run(os.path.join(bindir, "mlperf-prepare-data"), "--output", data, text)
    run(os.path.join(bindir, "mlperfc"), "emit-model", "llama3", "--preset", "llama31_8b_tiny",
        "--set", "gbs=8,micro_batch=4,lr=3e-3,warmup_steps=2,max_steps=40,eval_every=16,"
        "eval_samples=8,target=4.5", "-o", model)
    run(os.path.join(bindir, "mlperfc"), "compile", model, "-o", plan)
    # What a CPU-only machine cannot say about itself, as a submitter would give it.
    fields = os.path.join(workdir, "fields.json")
    with open(fields, "w") as f:
        json.dump({key: "n/a" for key in [
            "host_processor_frequency", "host_processor_caches", "host_processor_interconnect",
            "host_storage_type", "host_storage_capacity", "host_networking",
            "host_networking_topology", "host_memory_configuration", "accelerator_model_name",
            "accelerator_host_interconnect", "accelerator_frequency",
            "accelerator_on-chip_memories", "accelerator_memory_configuration",
            "accelerator_memory_capacity", "accelerator_interconnect",
            "accelerator_interconnect_topology", "cooling", "hw_notes",
            "other_software_stack", "sw_notes"]}, f)
    package = os.path.join(workdir, "package")
    common = ["--plan", plan, "--system", "tiny_1xcpu", "--org", "Example Org", "--status",
              "research", "--mlperf-run", os.path.join(bindir, "mlperf-run")]
    run_args = ["--", "--data", data, "--eval-data", data, "--print-every", "0"]

    # Ten runs (the rules' count for llama31_8b), each with its own seed, filed and checked.
    output = run(*submit, "run", package, *common, "--model", model, "--compile-command",
                 "mlperfc compile tiny.mlir -o tiny.pb", "--system-json", fields,
                 "--seeds", ",".join(str(s) for s in range(11, 21)), "--reduced-model",
                 *run_args, cwd=workdir)
    expect_in(output, "llama31_8b: the rules require 10 runs",
              "System description checker passed for tiny_1xcpu",
              "10 files do not comply",  # the reduced model's pinned hyperparameters
              "RCP Test Failed",  # its convergence is not the benchmark's: shown
              "passed every check except those a reduced model fails by construction",
              "score of a reduced model:")
    results = os.path.join(package, "results", "tiny_1xcpu", "llama31_8b")
    files = sorted(os.listdir(results))
    if files != sorted(f"result_{i}.txt" for i in range(10)):
        sys.exit(f"results folder holds {files}")
    seeds = set()
    for name in files:
        events = [json.loads(line.split(":::MLLOG ", 1)[1]) for line in open(
            os.path.join(results, name)) if ":::MLLOG " in line]
        values = {e["key"]: e["value"] for e in events}
        if values["submission_platform"] != "tiny_1xcpu" or \
                values["submission_org"] != "Example Org":
            sys.exit(f"{name}: submission keys {values}")
        seeds.add(values["seed"])
    if seeds != set(range(11, 21)):
        sys.exit(f"the runs logged seeds {sorted(seeds)}")
    with open(os.path.join(package, "systems", "tiny_1xcpu.json")) as f:
        system = json.load(f)
    if system["status"] != "Research, Development, or Internal (RDI)" or \
            system["number_of_nodes"] != "1" or system["accelerators_per_node"] != "1" or \
            not all(isinstance(v, str) for v in system.values()):
        sys.exit(f"system description {system}")
    implementation = os.path.join(package, "benchmarks", "llama31_8b", "implementations",
                                  "mlperfc")
    for name in ("README.md", "tiny.pb", "tiny.mlir"):
        if not os.path.exists(os.path.join(implementation, name)):
            sys.exit(f"benchmarks/ lacks {name}")
    expect_in(open(os.path.join(implementation, "README.md")).read(),
              "mlperfc compile tiny.mlir -o tiny.pb", "--seed SEED")
    if glob.glob(os.path.join(package, "**", ".tmp-*"), recursive=True) or \
            os.path.exists(os.path.join(package, ".pending")):
        sys.exit("temporary files left in the package")

    # Run again: every result is kept, nothing runs.
    output = run(*submit, "run", package, *common, "--reduced-model", *run_args, cwd=workdir)
    expect_in(output, "run 0: kept", "run 9: kept")
    if re.search(r"run \d+ of \d+: seed", output):
        sys.exit("a kept campaign ran again")
    run(*submit, "check", package, "--reduced-model")
    # Without --reduced-model the same package fails the official checks, and says so; its
    # logs are no results.
    expect_in(run(*submit, "check", package, expect=1), "package checker FAILED")
    expect_in(run(*submit, "score", package, expect=1), "the MLPerf checker refuses its log",
              "no score: more than one run did not converge or has no valid log")

    # No system fields given: those the checker requires and this machine cannot tell are
    # named. Runs that do not reach the target are reported and the score is refused.
    bare = os.path.join(workdir, "bare")
    output = run(*submit, "run", bare, *common, "--runs", "3", "--reduced-model",
                 "--", "--data", data, "--eval-data", data, "--print-every", "0",
                 "--target", "1", "--max-steps", "2", expect=1, cwd=workdir)
    expect_in(output, "lacks the fields", "cooling", "did NOT reach the target",
              "no score: more than one run did not converge or has no valid log")

    # Through mpirun, as a cluster launches: two data-parallel ranks, one log, the scale logged.
    plan2 = os.path.join(workdir, "tiny_dp2.pb")
    run(os.path.join(bindir, "mlperfc"), "compile", model, "--cluster", "1x2", "--parallel",
        "dp=2", "-o", plan2)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    launched = os.path.join(workdir, "launched")
    output = run(*submit, "run", launched, "--plan", plan2, *common[2:], "--runs", "1",
                 "--seeds", "5", "--launcher", "mpirun --oversubscribe -np 2",
                 "--system-json", fields, "--reduced-model", *run_args, expect=1, cwd=workdir,
                 env=env)
    expect_in(output, "mpirun --oversubscribe -np 2 ", "run 0: reached the target",
              "no score: fewer than three runs")
    with open(os.path.join(launched, "systems", "tiny_1xcpu.json")) as f:
        system = json.load(f)
    if (system["number_of_nodes"], system["accelerators_per_node"]) != ("1", "2"):
        sys.exit(f"the dp=2 package describes {system}")

    # A run that fails (here its launcher) is reported and filed nowhere.
    failed = os.path.join(workdir, "failed")
    output = run(*submit, "run", failed, *common, "--launcher", "false", *run_args, expect=1)
    expect_in(output, "run 0: FAILED with exit status 1", "no result filed",
              "the first run failed")
    if os.path.exists(os.path.join(failed, "results")):
        sys.exit("a failed run was filed")

    # Bad input.
    expect_in(run(*submit, "run", bare, *common, "--seeds", "1,1", *run_args, expect=1),
              "every run needs its own seed")
    expect_in(run(*submit, "run", bare, *common, "--", "--seed", "4", expect=1),
              "--seed after '--' is this tool's to set")
    expect_in(run(*submit, "run", bare, "--plan", "/no/such.pb", "--system", "s", "--org", "o",
                  expect=1), "no such file")
    expect_in(run(*submit, "run", bare, *common[:2], "--system", "a/b", "--org", "o", expect=1),
              "a system name is a file name")
    expect_in(run(*submit, "check", os.path.join(workdir, "nothing"), expect=1),
              "not a submission package")
    # Without the checkers installed (a Python without mlperf-logging): said, not a traceback.
    if shutil.which("python3") and subprocess.run(
            ["python3", "-c", "import mlperf_logging"], capture_output=True).returncode != 0:
        expect_in(run("python3", submit[1], "check", package, expect=1),
                  "mlperf-logging, pinned in requirements.txt) are not installed")


def worked_example(sourcedir, workdir):
    """Ten llama31_8b runs at global batch 16: one aborted, the rest converging a little
    faster than the reference: the score is the olympic average of the times to train times
    RCP mean / (olympic mean of the samples to converge)."""
    import mlperf_logging
    rcp_file = os.path.join(os.path.dirname(mlperf_logging.__file__), "rcp_checker",
                            "training_6.0.0", "rcps_llama31_8b.json")
    with open(rcp_file) as f:
        reference = json.load(f)["llama31_8b_ref_16"]["Epochs to converge"]

    def olympic(values):
        kept = sorted(values)[1:-1]
        return sum(kept) / len(kept)

    rcp_mean = olympic(reference)
    # Within the speedup the reference allows (about 2 % for this batch) but below its mean.
    samples = [round(rcp_mean * 0.985) + 16 * i for i in range(10)]
    minutes = [100.0 + 3.0 * i for i in range(10)]
    folder = os.path.join(workdir, "example", "results", "sys", "llama31_8b")
    os.makedirs(folder)
    for i in range(10):
        start = 1_000_000
        stop = start + int(minutes[i] * 60000)
        status = "aborted" if i == 4 else "success"
        lines = [
            {"key": "submission_benchmark", "value": "llama31_8b", "time_ms": 0},
            {"key": "global_batch_size", "value": 16, "time_ms": 0},
            {"key": "seed", "value": i, "time_ms": 0},
            {"key": "run_start", "value": None, "time_ms": start},
            {"key": "eval_accuracy", "value": 3.2, "time_ms": stop - 1,
             "metadata": {"samples_count": samples[i]}},
            {"key": "run_stop", "value": None, "time_ms": stop,
             "metadata": {"status": status}},
        ]
        with open(os.path.join(folder, f"result_{i}.txt"), "w") as f:
            for line in lines:
                line.setdefault("metadata", {})
                line["event_type"] = "POINT"
                f.write(":::MLLOG " + json.dumps(line) + "\n")
    # The aborted run is the slowest: dropped with the fastest; the RCP checker's mean drops
    # the aborted run (infinitely many samples) and the fewest samples likewise.
    converged = [samples[i] for i in range(10) if i != 4]
    expected_factor = rcp_mean / (sum(sorted(converged)[1:]) / 8)
    expected_minutes = [m for i, m in enumerate(minutes) if i != 4]
    expected_score = sum(sorted(expected_minutes)[1:]) / 8 * expected_factor
    # The logs hold only what the score reads, so the arithmetic is called directly (the
    # command also leaves out logs the compliance checker refuses: the tiny package below).
    sys.path.insert(0, os.path.join(sourcedir, "scripts"))
    import io
    import contextlib
    import mlperf_submit
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        runs = [mlperf_submit.Run(path) for path in mlperf_submit.result_files(folder)]
        valid = mlperf_submit.benchmark_score("llama31_8b", folder, runs)
    output = printed.getvalue()
    print(output)
    if not valid:
        sys.exit("the worked example has no valid score")
    expect_in(output, "result_4.txt: seed 4", "left out of the average", "RCP checker: passed")
    found = re.search(r"score: ([0-9.]+) minutes \(olympic average ([0-9.]+) minutes x RCP "
                      r"normalisation ([0-9.]+)\)", output)
    if not found:
        print(output)
        sys.exit("no score line")
    score, factor = float(found.group(1)), float(found.group(3))
    if abs(factor - expected_factor) > 1e-4 or abs(score - expected_score) > 1e-3 * score:
        sys.exit(f"score {score} x{factor}, expected {expected_score} x{expected_factor}")
    print(f"worked example: score {score} minutes, normalisation {factor} (expected "
          f"{expected_score:.4g}, {expected_factor:.4f})")


def main():
    bindir, sourcedir, workdir = (os.path.abspath(a) for a in sys.argv[1:4])
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    worked_example(sourcedir, workdir)
    tiny_package(bindir, sourcedir, workdir)
    print("check_submit: passed")


if __name__ == "__main__":
    main()
