"""From runs to an MLPerf Training submission package, checked and scored.

  mlperf_submit.py run PACKAGE --plan PLAN.pb --system NAME --org ORG [options] -- RUN_ARGS
  mlperf_submit.py check PACKAGE [--reduced-model]
  mlperf_submit.py score PACKAGE

`run` runs `mlperf-run PLAN` as many times as the rules require for the plan's benchmark
(`--runs` overrides), each with its own seed, through `--launcher` (`mpirun -np 64`, `srun`, or
nothing for one process), and files each MLPerf log as
`results/<system>/<benchmark>/result_<i>.txt`. A run whose log is already there is kept, so an
interrupted campaign continues where it stopped. It writes `systems/<system>.json` from the
submission options, the logs (nodes, accelerators per node) and this machine (processor,
memory, GPU, operating system), with `--system-json`/`--system-field` for what cannot be
detected (the checker's required fields still missing are named), and
`benchmarks/<benchmark>/implementations/mlperfc/` with the plan, the declaration and the
commands that built and ran it. Then it runs `check` and `score`.

`check` runs MLCommons' package checker (PyPI `mlperf-logging`, training rules 6.0.0: system
description, result file count and names, each log's compliance, unique seeds, the RCP
check) and prints its verdicts. With `--reduced-model` (packages of the tiny test variants)
a log that fails only the benchmark's pinned hyperparameters counts as passing
(scripts/check_mllog.py), and the RCP verdict is shown but not required.

`score` computes each benchmark's score as the rules do: time to train of each run
(run_stop - run_start, minutes), a run that did not reach the target counted as infinitely
slow, the fastest and slowest dropped (olympic average), times the RCP normalisation factor
that MLCommons' RCP checker gives when the runs converge faster than the reference.

Every file is written atomically. Exit status: 0 when everything passed, 1 otherwise.
"""
import argparse
import datetime
import json
import logging
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_mllog  # noqa: E402

USAGE, RULESET = "training", "6.0.0"

# mlperf-run's --submission-status and the system description's availability values.
STATUS_AVAILABILITY = {
    "onprem": "Available on-premise",
    "cloud": "Available cloud",
    "research": "Research, Development, or Internal (RDI)",
    "preview": "Preview",
}


def say(message):
    print(f"mlperf_submit: {message}", flush=True)


def fail(message):
    print(f"mlperf_submit: error: {message}", file=sys.stderr, flush=True)
    return 1


def write_atomically(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".tmp-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def copy_atomically(source, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    os.close(fd)
    try:
        shutil.copyfile(source, tmp)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


# --- MLPerf logs -------------------------------------------------------------------------

def log_events(path):
    """The :::MLLOG events of a log, in order; lines that do not parse are skipped."""
    events = []
    with open(path, encoding="latin-1") as f:
        for line in f:
            if ":::MLLOG " not in line:
                continue
            try:
                events.append(json.loads(line.split(":::MLLOG ", 1)[1]))
            except json.JSONDecodeError:
                continue
    return events


def log_value(events, key):
    for event in events:
        if event.get("key") == key:
            return event.get("value")
    return None


class Run:
    """One result file: its seed, time to train and whether it reached the target."""

    def __init__(self, path):
        self.path = path
        events = log_events(path)
        self.benchmark = log_value(events, "submission_benchmark")
        self.seed = log_value(events, "seed")
        self.nodes = log_value(events, "number_of_nodes")
        self.accelerators = log_value(events, "accelerators_per_node")
        start = [e["time_ms"] for e in events if e.get("key") == "run_start"]
        stop = [e for e in events if e.get("key") == "run_stop"]
        self.status = stop[0].get("metadata", {}).get("status") if stop else None
        self.minutes = None
        if start and stop:
            self.minutes = (stop[0]["time_ms"] - start[0]) / 60000.0
        self.problem = None
        if not start or not stop:
            self.problem = "the log has no run_start or no run_stop (an incomplete run)"
        elif self.status != "success":
            self.problem = f"run_stop status '{self.status}': the target was not reached"

    @property
    def converged(self):
        return self.problem is None


def olympic_score(minutes, dropped=1):
    """The rules' olympic average: runs sorted by time to train (None, a run that did not
    converge, is slowest), the `dropped` fastest and slowest left out, the rest averaged.
    None when a non-converged run would be counted (more of them than `dropped`)."""
    ranked = sorted(minutes, key=lambda m: float("inf") if m is None else m)
    kept = ranked[dropped:len(ranked) - dropped]
    if not kept or any(m is None for m in kept):
        return None
    return sum(kept) / len(kept)


def rcp_normalisation(benchmark_folder):
    """(passed, factor, verdict) from MLCommons' RCP checker: whether the runs' convergence
    is within what the reference convergence points allow, and the factor the score is
    multiplied by when they converge faster than the reference mean (1 when not)."""
    from mlperf_logging.rcp_checker import rcp_checker
    logger = logging.getLogger()
    level = logger.level
    logger.setLevel(logging.ERROR)  # the checker logs its working at INFO
    try:
        passed, message, factor = rcp_checker.check_directory(
            benchmark_folder, USAGE, RULESET, False, False, rcp_pass="pruned_rcps")
    except Exception as error:  # a benchmark without RCPs, unreadable logs
        return False, 1.0, f"could not run: {error}"
    finally:
        logger.setLevel(level)
    return passed, factor, ("passed" if passed else "FAILED") + f" ({message})"


def benchmark_folders(package):
    results = os.path.join(package, "results")
    if not os.path.isdir(results):
        return []
    folders = []
    for system in sorted(os.listdir(results)):
        if not os.path.isdir(os.path.join(results, system)):
            continue
        for benchmark in sorted(os.listdir(os.path.join(results, system))):
            folder = os.path.join(results, system, benchmark)
            if os.path.isdir(folder) and not benchmark.startswith("."):
                folders.append((system, benchmark, folder))
    return folders


def result_files(folder):
    names = [n for n in os.listdir(folder) if re.fullmatch(r"result_\d+\.txt", n)]
    return [os.path.join(folder, n) for n in sorted(names, key=lambda n: int(n[7:-4]))]


def required_runs(benchmark):
    from mlperf_logging.benchmark_meta import get_result_file_counts
    return get_result_file_counts(USAGE).get(benchmark)


def campaign_runs(benchmark):
    """How many runs `run` makes without --runs: the rules' count; None (with the error
    said) for a benchmark the rules do not name."""
    count = required_runs(benchmark)
    if count is None:
        fail(f"the rules name no run count for benchmark '{benchmark}': give --runs")
    else:
        say(f"{benchmark}: the rules require {count} runs")
    return count


# --- score -------------------------------------------------------------------------------

def score(args):
    folders = benchmark_folders(args.package)
    if not folders:
        return fail(f"{args.package} has no results/<system>/<benchmark>/ folder")
    ok = True
    for system, benchmark, folder in folders:
        runs = [Run(path) for path in result_files(folder)]
        # As MLCommons' result summarizer does: a log the checker refuses is no result.
        for run in runs:
            if run.problem is None and check_mllog.check_log(run.path, args.reduced_model)[0]:
                run.problem = (f"the MLPerf checker refuses its log (scripts/check_mllog.py "
                               f"{run.path} says why)")
        say(f"score of {system}/{benchmark}: {len(runs)} runs")
        ok = benchmark_score(benchmark, folder, runs, args.reduced_model) and ok
    return 0 if ok else 1


def benchmark_score(benchmark, folder, runs, reduced_model=False):
    """Prints each run and the benchmark's score as the rules compute it; False when there
    is no valid score."""
    for run in runs:
        time = f"{run.minutes:.4g} min" if run.minutes is not None else "no time"
        note = f" (left out of the average: {run.problem})" if run.problem else ""
        say(f"  {os.path.basename(run.path)}: seed {run.seed}, {time}{note}")
    ok = True
    required = required_runs(benchmark)
    if required is not None and len(runs) != required:
        ok = False
        say(f"  the rules require {required} runs of {benchmark}, the package has {len(runs)}")
    average = olympic_score([r.minutes if r.converged else None for r in runs])
    if average is None:
        say("  no score: more than one run did not converge or has no valid log (olympic "
            "scoring drops one)" if len(runs) >= 3 else "  no score: fewer than three runs")
        return False
    passed, factor, verdict = rcp_normalisation(folder)
    say(f"  RCP checker: {verdict}")
    if not passed and reduced_model:
        say(f"  score of a reduced model: {average:.4g} minutes (olympic average; the RCP "
            f"verdict is for the real benchmark's convergence)")
        return ok
    if not passed:
        say(f"  no valid score: the RCP check failed (olympic average {average:.4g} minutes)")
        return False
    say(f"  score: {average * factor:.4g} minutes (olympic average {average:.4g} minutes "
        f"x RCP normalisation {factor:.4f})")
    return ok


# --- check -------------------------------------------------------------------------------

def check(args):
    package = os.path.abspath(args.package)
    if not os.path.isdir(os.path.join(package, "results")):
        return fail(f"{args.package} has no results/ folder: not a submission package")
    with tempfile.TemporaryDirectory() as workdir:
        checker = subprocess.run(
            [sys.executable, "-m", "mlperf_logging.package_checker", package, USAGE, RULESET,
             "--log_output", os.path.join(workdir, "package_checker.log")],
            capture_output=True, text=True, cwd=workdir)
    output = checker.stdout + checker.stderr
    lines = output.splitlines()
    verdicts = [line for line in lines if re.match(r"(ERROR|WARNING) - ", line)
                or "RCP Test" in line or "System description checker" in line
                or "PACKAGE CHECKER" in line]
    # One line per distinct verdict (each log repeats its warnings), with its count.
    counts = {}
    for line in verdicts:
        counts[line.strip()] = counts.get(line.strip(), 0) + 1
    for line, count in counts.items():
        say(f"package checker: {line}" + (f" (x{count})" if count > 1 else ""))
    if "PACKAGE CHECKER FOUND NO ERRORS" in output:
        say(f"{args.package}: MLCommons' package checker passed")
        return 0
    if "PACKAGE CHECKER FOUND ERRORS" not in output:
        print(output, file=sys.stderr)
        say(f"{args.package}: MLCommons' package checker did not finish (its output above)")
        return 1
    if not args.reduced_model:
        say(f"{args.package}: MLCommons' package checker FAILED (its lines above)")
        return 1
    # A reduced model: its logs fail the pinned hyperparameters by construction and its
    # convergence is not the benchmark's, so those two verdicts are expected; every other
    # error is not.
    for line in verdicts:
        if not line.startswith("ERROR") or re.search(
                r"files? do(es)? not comply|RCP Test Failed", line):
            continue
        say(f"{args.package}: the package checker FAILED beyond a reduced model's expected "
            f"failures: {line.strip()}")
        return 1
    for _, _, folder in benchmark_folders(package):
        for path in result_files(folder):
            status, message = check_mllog.check_log(path, reduced_model=True)
            if status != 0:
                say(message)
                return 1
    say(f"{args.package}: MLCommons' package checker passed every check except those a reduced "
        f"model fails by construction (each log passes all but the benchmark's pinned "
        f"hyperparameters; the RCP verdict is for the real benchmark's convergence)")
    return 0


# --- run ---------------------------------------------------------------------------------

def read_cpuinfo():
    model, physical, cores = None, set(), set()
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return None, None, None
    for block in text.split("\n\n"):
        current = dict(line.split(":", 1) for line in block.splitlines() if ":" in line)
        current = {k.strip(): v.strip() for k, v in current.items()}
        if "model name" in current:
            model = current["model name"]
        if "physical id" in current:
            physical.add(current["physical id"])
            cores.add((current["physical id"], current.get("core id")))
    sockets = len(physical) or None
    core_count = (len(cores) // sockets) if sockets else None
    return model, sockets, core_count


def detect_machine():
    """What this machine says about itself, in the system description's fields."""
    fields = {}
    model, sockets, cores = read_cpuinfo()
    if model:
        fields["host_processor_model_name"] = model
    if sockets:
        fields["host_processors_per_node"] = sockets
    if cores:
        fields["host_processor_core_count"] = cores
    if os.cpu_count():
        fields["host_processor_vcpu_count"] = os.cpu_count()
    try:
        with open("/proc/meminfo") as f:
            kib = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1))
        fields["host_memory_capacity"] = f"{round(kib / 1024 / 1024)} GB"
    except (OSError, AttributeError):
        pass
    try:
        with open("/etc/os-release") as f:
            pretty = re.search(r'PRETTY_NAME="?([^"\n]+)', f.read())
        if pretty:
            fields["operating_system"] = pretty.group(1)
    except OSError:
        pass
    if shutil.which("nvidia-smi"):
        query = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
            capture_output=True, text=True)
        gpus = [line.split(",") for line in query.stdout.splitlines() if "," in line]
        if query.returncode == 0 and gpus:
            fields["accelerator_model_name"] = gpus[0][0].strip()
            fields["accelerator_memory_capacity"] = gpus[0][1].strip()
    return fields


def required_system_fields():
    """The fields MLCommons' system description checker requires (read from its source, so
    that a new requirement is named here too)."""
    import inspect
    from mlperf_logging.system_desc_checker import system_desc_checker
    source = inspect.getsource(system_desc_checker.check_system_desc)
    block = source.split("required_fields = [", 1)[1].split("]", 1)[0]
    return re.findall(r'"([^"]+)"', block)


def mlperf_run_binary(given):
    if given:
        return given
    found = shutil.which("mlperf-run")
    if found:
        return found
    built = os.path.join(os.path.dirname(HERE), "build", "bin", "mlperf-run")
    return built if os.path.exists(built) else "mlperf-run"


def parse_seeds(text):
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        return None
    return seeds if seeds and all(s >= 0 for s in seeds) else None


def run(args, run_args):
    if not os.path.isfile(args.plan):
        return fail(f"--plan {args.plan}: no such file")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", args.system):
        return fail(f"--system '{args.system}': a system name is a file name (letters, digits, "
                    f"'_', '.', '-')")
    if args.runs is not None and args.runs < 1:
        return fail(f"--runs must be at least 1, got {args.runs}")
    seeds = None
    if args.seeds:
        seeds = parse_seeds(args.seeds)
        if seeds is None:
            return fail(f"--seeds '{args.seeds}': give non-negative integers separated by commas")
        if len(set(seeds)) != len(seeds):
            return fail(f"--seeds '{args.seeds}': every run needs its own seed")
    extra_fields = {}
    if args.system_json:
        try:
            with open(args.system_json) as f:
                extra_fields.update(json.load(f))
        except (OSError, json.JSONDecodeError) as error:
            return fail(f"--system-json {args.system_json}: {error}")
    for field in args.system_field:
        if "=" not in field:
            return fail(f"--system-field '{field}': give key=value")
        key, value = field.split("=", 1)
        extra_fields[key] = value
    for option in ("--seed", "--mllog", "--submission-org", "--submission-division",
                   "--submission-platform", "--submission-status"):
        if any(a == option or a.startswith(option + "=") for a in run_args):
            return fail(f"{option} after '--' is this tool's to set")
    launcher = shlex.split(args.launcher) if args.launcher else []
    binary = mlperf_run_binary(args.mlperf_run)
    package = args.package
    # Logs being written, outside results/ (whose every folder the package checker reads).
    pending = os.path.join(package, ".pending")
    os.makedirs(pending, exist_ok=True)

    def command_for(seed, log):
        return launcher + [binary, args.plan, "--seed", str(seed), "--mllog", log,
                           "--submission-org", args.org, "--submission-division",
                           args.division, "--submission-platform", args.system,
                           "--submission-status", args.status] + run_args

    benchmark, count, failures = None, args.runs, []
    existing = {}
    for _, name, folder in benchmark_folders(package):
        if os.path.basename(os.path.dirname(folder)) == args.system:
            for path in result_files(folder):
                existing[int(os.path.basename(path)[7:-4])] = (name, path)
    if existing:
        benchmark = next(iter(existing.values()))[0]
    used_seeds = {Run(path).seed for _, path in existing.values()}
    draw = random.SystemRandom()
    i = 0
    while count is None or i < count:
        if i in existing:
            say(f"run {i}: kept {existing[i][1]}")
            if count is None:
                count = campaign_runs(benchmark)
                if count is None:
                    return 1
            i += 1
            continue
        if seeds is not None:
            if i >= len(seeds):
                return fail(f"--seeds gives {len(seeds)} seeds, {count} runs need one each")
            seed = seeds[i]
        else:
            seed = draw.randrange(1, 2**31)
            while seed in used_seeds:
                seed = draw.randrange(1, 2**31)
        if seed in used_seeds:
            return fail(f"seed {seed} of run {i} was used by a kept run")
        used_seeds.add(seed)
        log = os.path.join(pending, f"run_{i}.txt")
        command = command_for(seed, log)
        say(f"run {i}{'' if count is None else f' of {count}'}: seed {seed}: "
            f"{' '.join(shlex.quote(c) for c in command)}")
        started = datetime.datetime.now()
        try:
            status = subprocess.run(command).returncode
        except OSError as error:
            return fail(f"cannot start {command[0]}: {error}")
        took = (datetime.datetime.now() - started).total_seconds()
        if status not in (0, 2) or not os.path.exists(log):
            failures.append(f"run {i} (seed {seed}) failed with exit status {status}")
            say(f"run {i}: FAILED with exit status {status} after {took:.1f} s; no result "
                f"filed (its partial log, if any, is {log})")
            i += 1
            if count is None:
                return fail("the first run failed: nothing to learn the benchmark from")
            continue
        result = Run(log)
        if benchmark is None:
            benchmark = result.benchmark
            if not benchmark:
                return fail(f"{log} names no submission_benchmark: not an mlperf-run log")
        elif result.benchmark != benchmark:
            return fail(f"run {i} logged benchmark {result.benchmark}, earlier runs {benchmark}")
        if count is None:
            count = campaign_runs(benchmark)
            if count is None:
                return 1
        target = os.path.join(package, "results", args.system, benchmark, f"result_{i}.txt")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.replace(log, target)
        outcome = ("reached the target" if status == 0
                   else "did NOT reach the target (exit status 2): counted as not converged")
        say(f"run {i}: {outcome} in {took:.1f} s; filed as {target}")
        if status == 2:
            failures.append(f"run {i} (seed {seed}) did not reach the target")
        i += 1
    try:
        os.rmdir(pending)
    except OSError:
        pass
    if benchmark is None:
        return fail("no run produced a log")
    runs = [Run(path) for path in
            result_files(os.path.join(package, "results", args.system, benchmark))]

    # systems/<system>.json: detected < an existing file < the options given now.
    system_path = os.path.join(package, "systems", f"{args.system}.json")
    description = detect_machine()
    if runs and runs[0].nodes is not None:
        description["number_of_nodes"] = runs[0].nodes
        description["accelerators_per_node"] = runs[0].accelerators
    if os.path.exists(system_path):
        with open(system_path) as f:
            description.update(json.load(f))
    description.update({"submitter": args.org, "division": args.division,
                        "status": STATUS_AVAILABILITY[args.status], "system_name": args.system,
                        "framework": description.get("framework", "mlperfc")})
    description.update(extra_fields)
    # The official descriptions hold every value as a string (the checker joins some).
    description = {key: str(value) for key, value in description.items()}
    write_atomically(system_path, json.dumps(description, indent=2, sort_keys=True) + "\n")
    missing = [f for f in required_system_fields() if f not in description]
    say(f"wrote {system_path} (host fields detected on this machine: check them if the runs "
        f"used other nodes)")
    if missing:
        say(f"{system_path} lacks the fields {', '.join(missing)}: give them with "
            f"--system-json FILE or --system-field KEY=VALUE and run again (kept runs are not "
            f"repeated)")

    # benchmarks/<benchmark>/implementations/mlperfc/: what built and ran the results.
    implementation = os.path.join(package, "benchmarks", benchmark, "implementations", "mlperfc")
    copy_atomically(args.plan, os.path.join(implementation, os.path.basename(args.plan)))
    if args.model:
        copy_atomically(args.model, os.path.join(implementation, os.path.basename(args.model)))
    readme = [f"# {benchmark} with mlperfc", "",
              "The plan in this folder was compiled ahead of time by mlperfc and replayed by "
              "mlperf-run for every result of this benchmark.", ""]
    if args.compile_command:
        readme += ["Compiled with:", "", "```", args.compile_command, "```", ""]
    readme += ["Each run (SEED: the run's own seed, logged as `seed`):", "", "```",
               " ".join(shlex.quote(c) for c in command_for("SEED", "result_I.txt")),
               "```", ""]
    write_atomically(os.path.join(implementation, "README.md"), "\n".join(readme))
    say(f"wrote {implementation}/")

    status = 0
    for failure in failures:
        say(f"reported: {failure}")
        status = 1
    print(flush=True)
    if check(argparse.Namespace(package=package, reduced_model=args.reduced_model)) != 0:
        status = 1
    print(flush=True)
    if score(argparse.Namespace(package=package, reduced_model=args.reduced_model)) != 0:
        status = 1
    if missing:
        status = 1
    return status


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    run_args = []
    if "--" in argv:
        cut = argv.index("--")
        argv, run_args = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser(
        "run", help="run a benchmark N times and file the logs into a package",
        description="Runs mlperf-run PLAN once per seed (arguments after '--' go to every "
                    "run: --data, --eval-data, ...) and files the package.")
    run_parser.add_argument("package", help="the package folder (created if missing)")
    run_parser.add_argument("--plan", required=True, help="the plan mlperf-run replays")
    run_parser.add_argument("--system", required=True,
                            help="the system's name: systems/NAME.json, results/NAME/")
    run_parser.add_argument("--org", required=True, help="the submitting organisation")
    run_parser.add_argument("--division", choices=("closed", "open"), default="closed")
    run_parser.add_argument("--status", choices=sorted(STATUS_AVAILABILITY), default="onprem",
                            help="the system's availability (default onprem)")
    run_parser.add_argument("--runs", type=int,
                            help="how many runs (default: the rules' count for the benchmark)")
    run_parser.add_argument("--seeds", help="one seed per run, comma-separated (default: drawn "
                                            "at random, each logged)")
    run_parser.add_argument("--launcher", default="",
                            help="the command each run starts under, e.g. 'mpirun -np 64' or "
                                 "'srun' (default: none, one process)")
    run_parser.add_argument("--mlperf-run", help="the mlperf-run binary (default: on PATH, "
                                                 "else build/bin/mlperf-run)")
    run_parser.add_argument("--model", help="the declaration the plan was compiled from "
                                            "(copied into benchmarks/)")
    run_parser.add_argument("--compile-command",
                            help="the mlperfc compile command that built the plan")
    run_parser.add_argument("--system-json", help="system description fields (JSON object)")
    run_parser.add_argument("--system-field", action="append", default=[],
                            metavar="KEY=VALUE", help="one system description field")
    run_parser.add_argument("--reduced-model", action="store_true",
                            help="the plan is a reduced test model (see check)")
    check_parser = commands.add_parser("check", help="run MLCommons' package checker")
    check_parser.add_argument("package")
    check_parser.add_argument("--reduced-model", action="store_true",
                              help="allow what a reduced test model fails by construction")
    score_parser = commands.add_parser("score", help="the score of each benchmark")
    score_parser.add_argument("package")
    score_parser.add_argument("--reduced-model", action="store_true",
                              help="a failed RCP check does not void the score")
    args = parser.parse_args(argv)
    if args.command != "run" and run_args:
        parser.error("arguments after '--' are for 'run' only")
    try:
        import mlperf_logging  # noqa: F401
    except ImportError:
        return fail("MLCommons' checkers (PyPI mlperf-logging, pinned in requirements.txt) are "
                    "not installed for this Python: run scripts/setup.sh, then "
                    ".venv/bin/python scripts/mlperf_submit.py")
    if args.command == "run":
        return run(args, run_args)
    if args.command == "check":
        return check(args)
    return score(args)


if __name__ == "__main__":
    sys.exit(main())
