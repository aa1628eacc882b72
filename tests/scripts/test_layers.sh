#!/usr/bin/env bash
# tests/scripts/test_layers.sh LIB_DIR LAYERS_FILE CHECK_SCRIPT
# The layer check (cmake/check_layers.cmake) passes on the library as it is, and refuses a copy of
# it with one include that runs up the layers (nn/ including decode/), naming the file and the
# folders nn/ may use; a lower folder including a lower one stays allowed.
set -euo pipefail
lib=$1 layers=$2 check=$3
cmake -DLIB_DIR="$lib" -DLAYERS_FILE="$layers" -P "$check"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$lib" "$tmp/lib"
echo '#include "runtime/device.h"' >> "$tmp/lib/nn/mamba.h"
cmake -DLIB_DIR="$tmp/lib" -DLAYERS_FILE="$layers" -P "$check"
echo '#include "decode/transcript.h"' >> "$tmp/lib/nn/mamba.h"
if cmake -DLIB_DIR="$tmp/lib" -DLAYERS_FILE="$layers" -P "$check" > "$tmp/out" 2>&1; then
  echo "test_layers: an include of decode/ from nn/ passed the check" >&2
  exit 1
fi
grep -q 'lib/nn/mamba.h: #include "decode/transcript.h"' "$tmp/out" ||
  { cat "$tmp/out" >&2; echo "test_layers: the message does not name the file" >&2; exit 1; }
grep -q 'lib/nn/ may include: core hparams runtime ops' "$tmp/out" ||
  { cat "$tmp/out" >&2; echo "test_layers: the message does not say what nn/ may use" >&2; exit 1; }
echo "test_layers: ok"
