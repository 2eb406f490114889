#!/bin/sh
# The device preset's promise (docs/building.md): the binary runs on a GPU node that has only
# the NVIDIA driver and PyTorch's CUDA wheels, so ldd lists no protobuf, MPI, LLVM or
# libstdc++ (those are linked statically or not at all).
set -e
binary=$1
ldd "$binary"
if ldd "$binary" | grep -E 'libprotobuf|libmpi|libopen-|libLLVM|libMLIR|libstdc\+\+'; then
  echo "error: $binary links the libraries above dynamically" >&2
  exit 1
fi
echo "deployable: $binary"
