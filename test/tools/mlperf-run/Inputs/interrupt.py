"""Starts mlperf-run, sends SIGINT once it has printed its first step line, and checks that
it stops with status 130 and says where to resume. Usage: interrupt.py MLPERF-RUN ARGS..."""
import signal
import subprocess
import sys

run = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
for line in run.stdout:
    if line.startswith("step "):
        run.send_signal(signal.SIGINT)
        break
out, err = run.communicate(timeout=120)
print(err, end="")
if run.returncode != 130:
    sys.exit(f"expected exit status 130 after SIGINT, got {run.returncode}")
