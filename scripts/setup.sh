#!/usr/bin/env bash
# Installs everything mlperfc needs to build and test on Debian 12, by package name.
# Idempotent: re-running only installs what is missing. Run as root (or via sudo).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }

# Debian packages, by name. MLIR/LLVM 22 come from bookworm-security.
APT_PACKAGES=(
  build-essential cmake ninja-build ccache lld pkg-config git clang-format-22
  clang-22 libclang-rt-22-dev
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev
  libopenmpi-dev openmpi-bin
  libblis-pthread-dev
  libopenblas-pthread-dev
  libmimalloc-dev
  zlib1g-dev libzstd-dev libedit-dev libcurl4-openssl-dev libxml2-dev libffi-dev
  python3 python3-pip python3-venv
  fortunes-min
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "not root and sudo is missing: run this script as root"
  SUDO="sudo"
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${#missing[@]} Debian package(s): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q || die "apt-get update failed (network or sources.list?)"
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" \
    || die "apt-get install failed for: ${missing[*]}"
else
  say "all ${#APT_PACKAGES[@]} Debian packages already installed"
fi

for f in /usr/lib/llvm-22/lib/cmake/mlir/MLIRConfig.cmake /usr/lib/llvm-22/bin/FileCheck \
         /usr/lib/llvm-22/bin/lit; do
  [ -e "$f" ] || die "expected $f after installing MLIR 22; is bookworm-security in sources.list?"
done

# Python packages for test oracles and tooling, pinned in one file. A venv keeps them out of
# the system interpreter (Debian marks it externally managed).
venv="$repo/.venv"
if [ ! -x "$venv/bin/python" ]; then
  say "creating Python virtual environment at $venv"
  python3 -m venv "$venv" || die "python3 -m venv failed (is python3-venv installed?)"
fi
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$repo/requirements.txt"; then
  die "pip install -r requirements.txt failed"
fi
say "Python packages from requirements.txt installed into $venv"
# cudnn-frontend's C++ headers (the CUDA backend's fused attention, runtime/cuda/CudnnAttention),
# pinned; only its include/ is used, and --no-deps keeps its Python dependencies out.
frontend="$venv/cudnn-frontend"
if [ ! -f "$frontend/include/cudnn_frontend.h" ]; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --target "$frontend" \
    nvidia-cudnn-frontend==1.32.0 || die "pip install nvidia-cudnn-frontend==1.32.0 failed"
fi
say "cudnn-frontend 1.32.0 headers at $frontend/include"

if [ -x /usr/local/cuda/bin/nvcc ]; then
  say "CUDA toolkit found at /usr/local/cuda: the CUDA backend will be built"
else
  say "no CUDA toolkit at /usr/local/cuda: the CUDA backend will be off"
fi
say "done"
