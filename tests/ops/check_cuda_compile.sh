#!/bin/sh
# tests/ops/check_cuda_compile.sh LIB_DIR OUTPUT.o
# Compiles every lib/ops/*.cu for sm_90 with nvcc (no GPU needed); exits 77 (CTest: skipped)
# when no nvcc is installed.
set -e
lib="$1"
out="$2"
nvcc="$(command -v nvcc || true)"
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  echo "nvcc not found (PATH, /usr/local/cuda/bin): CUDA compile check skipped"
  exit 77
fi
for f in "$lib"/ops/*.cu; do
  echo "$nvcc -std=c++17 -O3 -gencode=arch=compute_90,code=sm_90 -c $f"
  "$nvcc" -std=c++17 -O3 -gencode=arch=compute_90,code=sm_90 -Werror all-warnings -I"$lib" -c "$f" -o "$out"
done
