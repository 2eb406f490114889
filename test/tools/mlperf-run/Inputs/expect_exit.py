"""Runs a command and succeeds only if it exits with the given status (lit's `not` accepts
any non-zero one). Usage: expect_exit.py STATUS COMMAND ARGS..."""
import subprocess
import sys

status = subprocess.call(sys.argv[2:])
if status != int(sys.argv[1]):
    sys.exit(f"expected exit status {sys.argv[1]}, got {status}")
