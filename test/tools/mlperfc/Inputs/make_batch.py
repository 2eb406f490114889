"""Writes a safetensors batch with int64 'tokens' and 'labels' (standard library only).

Usage: make_batch.py OUT BATCH SEQ VOCAB [--bad-token N] [--only tokens]
                     [--steps N [--first-step F]]
Token t of sequence b in step s is (7 b + 3 t + 11 s) mod VOCAB; labels are the next token.
With --steps the tensors are [N, BATCH, SEQ] for steps F .. F+N-1, else [BATCH, SEQ]."""
import json
import struct
import sys


def main():
    out, batch, seq, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    args = sys.argv[5:]
    steps = int(args[args.index("--steps") + 1]) if "--steps" in args else None
    first = int(args[args.index("--first-step") + 1]) if "--first-step" in args else 0
    step_range = range(first, first + (steps or 1))
    tokens = [(7 * b + 3 * t + 11 * s) % vocab
              for s in step_range for b in range(batch) for t in range(seq)]
    labels = [(7 * b + 3 * (t + 1) + 11 * s) % vocab
              for s in step_range for b in range(batch) for t in range(seq)]
    shape = [steps, batch, seq] if steps else [batch, seq]
    if "--bad-token" in args:
        tokens[0] = int(args[args.index("--bad-token") + 1])
    tensors = {"tokens": tokens, "labels": labels}
    if "--only" in args:
        tensors = {args[args.index("--only") + 1]: tokens}
    header, data = {}, b""
    for name, values in tensors.items():
        raw = struct.pack("<%dq" % len(values), *values)
        header[name] = {"dtype": "I64", "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    encoded = json.dumps(header).encode()
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded + data)


if __name__ == "__main__":
    main()
