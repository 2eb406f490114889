"""Starts mlperf-run, sends SIGINT once it has printed its first step line, and checks that
it stops with status 130 and says where to resume. Usage: interrupt.py [--any-status]
MLPERF-RUN ARGS... With --any-status (a job under mpirun, whose status is mpirun's), any
non-zero status will do."""
import signal
import subprocess
import sys

any_status = sys.argv[1] == "--any-status"
command = sys.argv[2:] if any_status else sys.argv[1:]
run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
for line in run.stdout:
    if line.startswith("step "):
        run.send_signal(signal.SIGINT)
        break
out, err = run.communicate(timeout=120)
print(err, end="")
if any_status and run.returncode == 0:
    sys.exit("expected a non-zero exit status after SIGINT, got 0")
if not any_status and run.returncode != 130:
    sys.exit(f"expected exit status 130 after SIGINT, got {run.returncode}")
