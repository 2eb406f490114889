"""Checks a Chrome trace written by mlperfc predict --trace or mlperf-run --trace: valid JSON,
named tracks, complete events with non-negative times named by op and declaration line, and
(with --expect-program) events of that program. Prints a one-line summary for FileCheck."""
import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("trace")
parser.add_argument("--expect-program", default="forward_backward")
args = parser.parse_args()
with open(args.trace) as f:
    trace = json.load(f)
events = trace["traceEvents"]
spans = [e for e in events if e["ph"] == "X"]
threads = sorted({e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"})
processes = sorted({e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"})
assert spans, "no spans"
for span in spans:
    assert span["ts"] >= 0 and span["dur"] >= 0, span
named = [s for s in spans if ".mlir:" in s["name"]]
programs = {s["args"]["program"] for s in spans}
assert args.expect_program in programs, programs
print(f"trace ok: {len(spans)} spans, {len(named)} with a declaration line, "
      f"processes {processes}, threads {threads}, source {trace['otherData']['source']}")
