"""Plants one compliance violation in an execution plan, for the audit's tests.

Usage: edit_plan.py IN.pb OUT.pb EDIT

EDIT is one of: epsilon (the 5th AdamW update's eps 1e-08 in its element program),
weight-decay (the first AdamW update without weight decay), clip (clip_coefficient max_norm 0.5), warmup (lr_value warmup_steps
64), init-std (the first o_proj draws with std 0.02), fp8-cast (the first convert in
optimizer_step writes F8E4M3FN, unscaled), data-order (micro-batches 1 and 2 of train_step
swap their tokens), state-unknown-role / state-duplicate-role / state-missing (the first
exp_avg state tensor gets role "velocity", becomes a second exp_avg_sq, or is dropped),
state-starts-as-itself (the first parameter's own state tensor is marked starts_as_param),
batch-layout-repeat (the batch layout reads global micro-batch 0 twice, never 1),
adagrad-program (the first Adagrad update's eps in its element program
1e-08 -> 1e-07), no-compile-options (as a plan of another producer), huge-accumulation (2^40 micro-batches
recorded). The plan stays valid (runtime/plan.proto) and is re-signed (its CRC-32
self-check); only the standard library is used: a minimal protobuf wire-format codec with the nesting of the plan's messages.
"""
import re
import struct
import sys
import zlib

# Length-delimited fields that are messages, per message: field -> message name.
NESTED = {
    "Plan": {3: "ModelInfo", 4: "Buffer", 5: "Arena", 7: "Program", 8: "Mesh", 10: "State",
             11: "CompileOptions"},
    "Program": {4: "Command"},
    "Command": {4: "Attribute"},
    "Attribute": {5: "IntList"},
}


def read_varint(data, pos):
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def decode(data, kind):
    fields, pos = [], 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = read_varint(data, pos)
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        elif wire == 2:
            length, pos = read_varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
            if number in NESTED.get(kind, {}):
                value = decode(value, NESTED[kind][number])
        else:
            sys.exit(f"unsupported wire type {wire}")
        fields.append([number, wire, value])
    return fields


def encode(fields):
    out = bytearray()
    for number, wire, value in fields:
        out += varint(number << 3 | wire)
        if wire == 0:
            out += varint(value)
        elif wire in (1, 5):
            out += value
        else:
            body = encode(value) if isinstance(value, list) else value
            out += varint(len(body)) + body
    return bytes(out)


def sign(body):
    """A plan file's self-check (runtime/plan.proto, file_crc32): the CRC-32 of every byte
    before it, as the last field. The edits here are deliberate, so they re-sign."""
    return body + b"\x7d" + struct.pack("<I", zlib.crc32(body))


def get(fields, number):
    return [f for f in fields if f[0] == number]


def text(fields, number):
    found = get(fields, number)
    return found[0][2].decode() if found else ""


def packed(fields, number):
    values = []
    for f in get(fields, number):
        pos = 0
        while pos < len(f[2]):
            value, pos = read_varint(f[2], pos)
            values.append(value)
    return values


def set_packed(fields, number, values):
    fields[:] = [f for f in fields if f[0] != number] + [[number, 2, b"".join(map(varint, values))]]


def program(plan, name):
    return next(p[2] for p in get(plan, 7) if text(p[2], 1) == name)


def commands(prog, op):
    return [c[2] for c in get(prog, 4) if text(c[2], 1) == op]


def attribute(command, name):
    return next(a[2] for a in get(command, 4) if text(a[2], 1) == name)


def set_double(attr, value):
    attr[:] = [f for f in attr if f[0] not in (2, 3, 4, 5)] + [[3, 1, struct.pack("<d", value)]]


def set_int(attr, value):
    attr[:] = [f for f in attr if f[0] not in (2, 3, 4, 5)] + [[2, 0, value]]


def set_string(attr, value):
    attr[:] = [f for f in attr if f[0] not in (2, 3, 4, 5)] + [[4, 2, value.encode()]]


def updates(plan):
    """The AdamW updates of optimizer_step: element programs with eight operands."""
    return [c for c in commands(program(plan, "optimizer_step"), "elementwise")
            if len(packed(c, 2)) == 8]


def set_program(command, pattern, replacement):
    """Rewrites the first match of `pattern` in the command's element program."""
    attr = attribute(command, "program")
    source_text = text(attr, 4)
    edited = re.sub(pattern, replacement, source_text, count=1)
    assert edited != source_text, source_text
    set_string(attr, edited)


def buffer(plan, index):
    return get(plan, 4)[index][2]


def main():
    source, target, edit = sys.argv[1:4]
    plan = decode(open(source, "rb").read(), "Plan")
    names = [text(b[2], 2) for b in get(plan, 4)]
    if edit == "epsilon":
        set_program(updates(plan)[4], r"sqrt \S+ \+", "sqrt 1e-08 +")
    elif edit == "weight-decay":
        set_program(updates(plan)[0], r"/ \S+ a0 \* \+", "/ 0 a0 * +")
    elif edit == "clip":
        set_double(attribute(commands(program(plan, "optimizer_step"), "clip_coefficient")[0],
                             "max_norm"), 0.5)
    elif edit == "warmup":
        set_int(attribute(commands(program(plan, "optimizer_step"), "lr_value")[0],
                          "warmup_steps"), 64)
    elif edit == "init-std":
        for command in commands(program(plan, "init_params"), "random_normal"):
            if "o_proj" in names[packed(command, 3)[0]]:
                set_double(attribute(command, "std"), 0.02)
                break
    elif edit == "fp8-cast":
        convert = commands(program(plan, "optimizer_step"), "convert")[0]
        result = buffer(plan, packed(convert, 3)[0])
        elements = 1
        for dim in packed(result, 4):
            elements *= dim
        result[:] = [f for f in result if f[0] not in (3, 7)] + [[3, 0, 3], [7, 0, elements]]
    elif edit == "data-order":
        copies = {}
        for command in commands(program(plan, "train_step"), "copy"):
            micro = get(command, 7)
            if micro and names[packed(command, 3)[0]] == "input.tokens":
                copies[micro[0][2]] = command
        first, second = packed(copies[1], 2), packed(copies[2], 2)
        set_packed(copies[1], 2, second)
        set_packed(copies[2], 2, first)
    elif edit == "adagrad-program":
        set_program(commands(program(plan, "optimizer_step"), "elementwise")[0], r"1e-08",
                    "1e-07")
    elif edit in ("state-unknown-role", "state-duplicate-role", "state-missing"):
        moments = [f for f in get(plan, 10) if text(f[2], 3) == "exp_avg"]
        if edit == "state-missing":
            plan.remove(moments[0])
        else:
            # An unknown role, or the parameter's exp_avg_sq a second time.
            role = next(f for f in moments[0][2] if f[0] == 3)
            role[2] = b"velocity" if edit == "state-unknown-role" else b"exp_avg_sq"
    elif edit == "state-starts-as-itself":
        first = next(f for f in get(plan, 10) if text(f[2], 3) == "param")
        first[2].append([14, 0, 1])
    elif edit == "batch-layout-repeat":
        info = next(f[2] for f in plan if f[0] == 3)
        layout = packed(info, 26)
        layout[1] = layout[0]
        set_packed(info, 26, layout)
    elif edit == "huge-accumulation":
        info = next(f[2] for f in plan if f[0] == 3)
        info[:] = [f for f in info if f[0] != 7] + [[7, 0, 1 << 40]]
    elif edit == "no-compile-options":
        plan[:] = [f for f in plan if f[0] != 11]
    else:
        sys.exit(f"unknown edit '{edit}'")
    open(target, "wb").write(sign(encode([f for f in plan if f[0] != 15])))


if __name__ == "__main__":
    main()
