"""Writes a safetensors batch with int64 'tokens' and 'labels' (standard library only).

Usage: make_batch.py OUT BATCH SEQ VOCAB [--bad-token N] [--only tokens]
Token t of sequence b is (7 b + 3 t) mod VOCAB; labels are the next token."""
import json
import struct
import sys


def main():
    out, batch, seq, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    args = sys.argv[5:]
    tokens = [(7 * b + 3 * t) % vocab for b in range(batch) for t in range(seq)]
    labels = [(7 * b + 3 * (t + 1)) % vocab for b in range(batch) for t in range(seq)]
    if "--bad-token" in args:
        tokens[0] = int(args[args.index("--bad-token") + 1])
    tensors = {"tokens": tokens, "labels": labels}
    if "--only" in args:
        tensors = {args[args.index("--only") + 1]: tokens}
    header, data = {}, b""
    for name, values in tensors.items():
        raw = struct.pack("<%dq" % len(values), *values)
        header[name] = {"dtype": "I64", "shape": [batch, seq],
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    encoded = json.dumps(header).encode()
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded + data)


if __name__ == "__main__":
    main()
