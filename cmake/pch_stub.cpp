// Translation unit that owns the shared MLIR precompiled header.
