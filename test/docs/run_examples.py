#!/usr/bin/env python3
"""The doc test: runs every fenced block marked `sh example` in the README (in order, in one
scratch directory, each block under `bash -euo pipefail`), where `build/bin` and `models` are
the build's and the repository's, and checks that every IR dump or certificate file name the
README and docs/ cite (`NN-pass.mlir`, `NN-pass.certificate.json`) is one `mlperfc compile
--dump-ir` writes for the tiny Llama on one rank or on two data-parallel ranks.

usage: run_examples.py REPO BIN WORKDIR
Prints a summary line per check; exits 1 naming the first failure."""

import os
import pathlib
import re
import subprocess
import sys

EXAMPLE = re.compile(r"^```sh example\n(.*?)^```", re.S | re.M)
DUMP_NAME = re.compile(r"\b\d\d-[a-z][a-z0-9-]*\.(?:mlir|certificate\.json)\b")


def fail(message):
    print(f"run_examples.py: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    repo, bin_dir, work = (pathlib.Path(p).resolve() for p in sys.argv[1:4])
    work.mkdir(parents=True, exist_ok=True)
    (work / "build").mkdir(exist_ok=True)
    for link, target in ((work / "build" / "bin", bin_dir), (work / "models", repo / "models")):
        if not link.exists():
            link.symlink_to(target)
    # mpirun refuses root without these (the README says so next to its mpirun example).
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ.get('PATH', '')}",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

    readme = (repo / "README.md").read_text()
    blocks = EXAMPLE.findall(readme)
    if not blocks:
        fail("README.md has no ```sh example block")
    commands = 0
    for number, block in enumerate(blocks, 1):
        lines = [line for line in block.splitlines() if line.strip()]
        commands += len(lines)
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            fail(f"README example block {number} failed (exit {done.returncode}):\n{block}\n"
                 f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}")
    print(f"examples: {commands} commands in {len(blocks)} blocks ran")

    written = set()
    for name, flags in (("one-rank", []), ("dp2", ["--cluster", "1x2", "--parallel", "dp=2"])):
        dumps = work / f"dumps-{name}"
        subprocess.run([bin_dir / "mlperfc", "compile", repo / "models" / "llama31_8b_tiny.mlir",
                        "--dump-ir", dumps, "-o", work / f"{name}.pb"] + flags, check=True,
                       capture_output=True)
        written |= {p.name for p in dumps.iterdir()}
    cited = {}
    for doc in [repo / "README.md"] + sorted((repo / "docs").glob("*.md")):
        for name in DUMP_NAME.findall(doc.read_text()):
            cited.setdefault(name, doc.relative_to(repo))
    missing = {name: doc for name, doc in cited.items() if name not in written}
    if missing:
        fail("dump names the docs cite that compile --dump-ir does not write: " +
             ", ".join(f"{name} ({doc})" for name, doc in sorted(missing.items())))
    print(f"dump names: {len(cited)} cited, all written")


if __name__ == "__main__":
    main()
