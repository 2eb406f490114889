"""What plan-schedule did to placed plans (plan-memory output), independently of it.

Usage: schedule_check.py UNSCHEDULED.mlir DEFAULT.mlir TIGHT.mlir ROOMY.mlir

Prints whether each plan's activation lower bound (the most bytes alive at once) stays
within the unscheduled one, and compares the overlap: over all collectives, the compute-stream
commands between a collective and the compute stream's wait for it (they run meanwhile).
"""
import re
import sys


def lower_bound(text, path):
    match = re.search(r"plan\.arena @activations activations[^\n]*lower_bound = (\d+)", text)
    if not match:
        sys.exit(f"{path}: no activations arena with a lower_bound")
    return int(match.group(1))


def overlapped(text):
    count = 0
    for program in re.findall(r"plan\.program .*?\n(.*?)\n    \}", text, re.S):
        commands = [line for line in program.split("\n") if "plan.command" in line]
        recorded_at = {}
        for index, command in enumerate(commands):
            event = re.search(r"event = (\d+)", command)
            stream1 = "stream = 1" in command
            if event and stream1 and '"event_record"' in command:
                recorded_at[event.group(1)] = index
            elif event and not stream1 and '"event_wait"' in command:
                start = recorded_at.get(event.group(1))
                if start is not None:
                    count += sum(
                        "stream = 1" not in c and '"event_' not in c for c in commands[start:index]
                    )
    return count


plans = {}
for name, path in zip(["unscheduled", "default", "tight", "roomy"], sys.argv[1:5]):
    text = open(path).read()
    plans[name] = (lower_bound(text, path), overlapped(text))
base = plans["unscheduled"][0]
print("unscheduled overlapped:", plans["unscheduled"][1])
print("default <= unscheduled:", plans["default"][0] <= base)
print("tight <= unscheduled:", plans["tight"][0] <= base)
print("roomy > unscheduled:", plans["roomy"][0] > base)
print("roomy overlaps more than default:", plans["roomy"][1] > plans["default"][1])
print("default overlapped any:", plans["default"][1] > 0)
