"""Writes an mlperf-run checkpoint's parameters as a Hugging Face sharded checkpoint.

Usage: to_hf_checkpoint.py IN.safetensors OUTDIR --qkv-rows Q,K,V [--shards N] [--drop SUB]

The parameters (no optimizer.* entries, no mlperfc metadata or checksum, as other tools write
them) go to OUTDIR/model-0000k-of-0000N.safetensors, round-robin in name order, with
OUTDIR/model.safetensors.index.json naming each tensor's file. Each fused
`...self_attn.qkv_proj.weight` is written apart as q_proj, k_proj and v_proj of Q, K and V
rows, as Hugging Face's Llama checkpoints store them. --drop leaves out the tensors whose
names contain SUB (to test the errors). Standard library only.
"""
import argparse
import json
import os
import struct

ELEMENT_BYTES = {"F32": 4, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I32": 4, "I64": 8}


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    header.pop("__metadata__", None)
    body = data[8 + length:]
    return {name: (entry["dtype"], entry["shape"],
                   body[entry["data_offsets"][0]:entry["data_offsets"][1]])
            for name, entry in header.items()}


def write(path, tensors):
    header, chunks, offset = {}, [], 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    encoded = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("directory")
    parser.add_argument("--qkv-rows", required=True)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--drop")
    args = parser.parse_args()
    rows = [int(r) for r in args.qkv_rows.split(",")]
    tensors = {}
    for name, (dtype, shape, raw) in read(args.source).items():
        if name.startswith("optimizer."):
            continue
        if name.endswith("self_attn.qkv_proj.weight"):
            assert shape[0] == sum(rows), (name, shape)
            row_bytes = len(raw) // shape[0]
            start = 0
            for part, count in zip("qkv", rows):
                tensors[name[:-len("qkv_proj.weight")] + part + "_proj.weight"] = (
                    dtype, [count] + shape[1:], raw[start:start + count * row_bytes])
                start += count * row_bytes
        else:
            tensors[name] = (dtype, shape, raw)
    if args.drop:
        tensors = {n: t for n, t in tensors.items() if args.drop not in n}
    os.makedirs(args.directory, exist_ok=True)
    names = sorted(tensors)
    weight_map = {}
    for k in range(args.shards):
        shard = f"model-{k + 1:05d}-of-{args.shards:05d}.safetensors"
        members = names[k::args.shards]
        write(os.path.join(args.directory, shard), {n: tensors[n] for n in members})
        weight_map.update({n: shard for n in members})
    with open(os.path.join(args.directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": sum(len(t[2]) for t in tensors.values())},
                   "weight_map": weight_map}, f)


if __name__ == "__main__":
    main()
