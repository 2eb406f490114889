"""Checks that two Llama declarations differ only in sizes.

Usage: differ_only_in_sizes.py A.mlir B.mlir

Sizes are tensor dimensions, layer counts (count, repeat), GQA group size (times), the
sequence length, the attention scale 1/sqrt(head_dim) (checked against each file's head_dim),
the model's symbol and the benchmark's reference convergence points (only the benchmark model
has them). Everything else (ops, order, attributes, hyperparameters, parameter
names, initialization) must be identical. Exits 1 naming the first difference.
"""
import math
import re
import sys


def normalize(path):
    text = open(path).read()
    lines = [l for l in text.splitlines() if not l.lstrip().startswith("//")]
    text = "\n".join(lines)
    # Reference convergence points are the benchmark model's own; its test-size and other
    # variants have none.
    text = re.sub(r",\s*rcp_batch_sizes = array<i64:[^>]*>,\s*rcp_mean_samples = array<i64:[^>]*>",
                  "", text)
    head_dims = {int(m.group(1)) for m in re.finditer(
        r"%q4 = tg.reshape %q : tensor<[0-9x]+xbf16> -> tensor<\d+x\d+x\d+x(\d+)x", text)}
    if len(head_dims) != 1:
        sys.exit(f"{path}: cannot find head_dim from the %q4 reshape")
    head_dim = head_dims.pop()
    for match in re.finditer(r"tg.scale %scores \{factor = ([0-9.e+-]+)\}", text):
        if not math.isclose(float(match.group(1)), 1 / math.sqrt(head_dim), rel_tol=1e-15):
            sys.exit(f"{path}: attention scale {match.group(1)} is not 1/sqrt({head_dim})")
    text = re.sub(r"tensor<([0-9]+x)+", "tensor<SHAPEx", text)
    text = re.sub(r"tg.model @\w+", "tg.model @NAME", text)
    text = re.sub(r"\b(count|times = |repeat = |seq_len = )\s*\d+", r"\1 N", text)
    # Block and piece sizes (a fused projection's blocks, the experts' [gate; up] split), and
    # the sizes a test variant scales with its vocabulary and sequence: top-k of its experts,
    # the sliding window, the end-of-document id.
    text = re.sub(r"\b(shard_blocks|sizes) = array<i64:[^>]*>", r"\1 = SIZES", text)
    text = re.sub(r"\b(top_k|window|masked_token) = \d+", r"\1 = N", text)
    text = re.sub(r"factor = [0-9.e+-]+\} : tensor<SHAPExf32>", "factor = SCALE} : tensor<SHAPExf32>", text)
    return text


def main():
    a, b = sys.argv[1], sys.argv[2]
    if open(a).read() == open(b).read():
        sys.exit(f"{a} and {b} are identical: nothing was compared")
    na, nb = normalize(a), normalize(b)
    for number, (la, lb) in enumerate(zip(na.splitlines(), nb.splitlines()), 1):
        if la != lb:
            sys.exit(f"differ beyond sizes at normalized line {number}:\n  {a}: {la}\n  {b}: {lb}")
    if len(na.splitlines()) != len(nb.splitlines()):
        sys.exit("the declarations have different numbers of lines")
    print("differ only in sizes")


if __name__ == "__main__":
    main()
