#!/usr/bin/env python3
"""Runs `mlperfc plan-search ARGS...`, then, for each of its first N strategies, the commands
it prints under "build:" (emit-model as printed; the compile command both as printed and as
`mlperfc predict` with the same flags) in DIR, and checks that predict's step equals the
search's within 1%.

usage: search_commands.py DIR N plan-search-arguments...
       search_commands.py DIR N --from OUTPUT  (what an earlier plan-search printed, run in DIR)
Prints one "ok" line per strategy checked; exits 1 naming the first disagreement."""

import re
import shlex
import subprocess
import sys

UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}


def seconds(text):
    match = re.fullmatch(r"([0-9.]+) (s|ms|us)", text.strip())
    if not match:
        sys.exit(f"cannot read a duration from '{text}'")
    return float(match.group(1)) * UNITS[match.group(2)]


def run(argv, cwd):
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{shlex.join(argv)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def strategies(output):
    """(description, step seconds, [build command lines]) per ranked strategy, in order."""
    found, current, building = [], None, False
    for line in output.splitlines():
        header = re.match(r"\s+(\d+)\. (dp=.*)$", line)
        if header:
            current = {"description": header.group(2), "commands": []}
            found.append(current)
            building = False
            continue
        if current is None:
            continue
        step = re.match(r"\s+step ([0-9.]+ (?:s|ms|us)),", line)
        if step:
            current["step"] = seconds(step.group(1))
        build = re.match(r"\s+build: (.*)$", line)
        if build:
            current["commands"].append(build.group(1))
            building = True
        elif building and re.match(r"\s{13}mlperfc ", line):
            current["commands"].append(line.strip())
        elif building:
            building = False
    return found


def main():
    workdir, count, arguments = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    if arguments[:1] == ["--from"]:
        with open(arguments[1]) as printed:
            output = printed.read()
    else:
        output = run(["mlperfc", "plan-search"] + arguments, workdir)
    ranked = strategies(output)
    if len(ranked) < count:
        sys.exit(f"plan-search ranked {len(ranked)} strategies, expected at least {count}:\n"
                 + output)
    for strategy in ranked[:count]:
        commands = [shlex.split(c) for c in strategy["commands"]]
        if not commands or commands[-1][:2] != ["mlperfc", "compile"]:
            sys.exit(f"{strategy['description']}: no compile command under it")
        for argv in commands[:-1]:
            run(argv, workdir)
        compile_argv = commands[-1]
        run(compile_argv, workdir)
        predict_argv = ["mlperfc", "predict"] + compile_argv[2:]
        where = predict_argv.index("-o")
        del predict_argv[where:where + 2]
        predicted = re.search(r"predicted step of .*: ([0-9.]+ (?:s|ms|us))\n",
                              run(predict_argv, workdir))
        if not predicted:
            sys.exit(f"{shlex.join(predict_argv)} printed no predicted step")
        step = seconds(predicted.group(1))
        if abs(step - strategy["step"]) > 0.01 * strategy["step"]:
            sys.exit(f"{strategy['description']}: plan-search says {strategy['step']} s, "
                     f"predict on its command {step} s")
        print(f"ok {strategy['description']}: {len(commands)} command(s), step within 1% of "
              "predict's")


if __name__ == "__main__":
    main()
