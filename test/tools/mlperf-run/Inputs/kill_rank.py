"""Kills one rank of an mpirun job once it trains, and checks that the job ends promptly.

usage: kill_rank.py [--stop] RANK TIMEOUT_S mpirun ... mlperf-run ... --print-every 1
Starts the command, waits until rank 0 prints its first step line, kills (with --stop:
stops, SIGSTOP: a hung rank that does not die) the MPI
process whose OMPI_COMM_WORLD_RANK is RANK with SIGKILL, and then expects the whole job to
exit non-zero within TIMEOUT_S seconds. Prints the job's output and "job ended: status N";
exits 1 if the job hangs, succeeds or the rank never starts.
"""
import os
import signal
import subprocess
import sys
import time


def parent_of(pid):
    """The parent pid of `pid` (from /proc/PID/stat, whose name field may hold spaces)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2:].split()[1])


def descends_from(pid, ancestor):
    while pid and pid > 1:
        if pid == ancestor:
            return True
        pid = parent_of(pid)
    return False


def rank_pid(job_pid, rank):
    """The pid of the descendant of job_pid whose environment says it is MPI rank `rank`.

    Only this job's ranks: another test's mpirun job may run on the machine at the same time.
    """
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or not descends_from(int(entry), job_pid):
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if (b"OMPI_COMM_WORLD_RANK=%d" % rank) in environ and b"mlperf-run" in cmdline:
            return int(entry)
    return None


def main():
    stop = sys.argv[1] == "--stop"
    args = sys.argv[2:] if stop else sys.argv[1:]
    rank, timeout = int(args[0]), float(args[1])
    job = subprocess.Popen(args[2:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen = []
    for line in job.stdout:  # until training has started (or the job ended)
        seen.append(line)
        if line.startswith(b"step "):
            break
    sys.stdout.write(b"".join(seen).decode(errors="replace"))
    pid = rank_pid(job.pid, rank)
    if job.poll() is not None or pid is None:
        print("the job did not start training, or rank", rank, "was not found")
        job.kill()
        return 1
    os.kill(pid, signal.SIGSTOP if stop else signal.SIGKILL)
    killed = time.time()
    try:
        output, _ = job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        job.kill()
        os.kill(pid, signal.SIGKILL)
        print(f"the job still ran {timeout} s after rank {rank} was killed: it hangs")
        return 1
    sys.stdout.write(output.decode(errors="replace"))
    print(f"job ended: status {job.returncode} after {time.time() - killed:.1f} s")
    return 0 if job.returncode != 0 else 1


if __name__ == "__main__":
    sys.exit(main())
