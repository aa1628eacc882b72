#!/usr/bin/env bash
# scripts/setup.sh — installs everything mamba-asr needs to build, run and test, from Debian 12's
# package archive only. Idempotent: when everything is present it checks and returns in seconds.
#
#   scripts/setup.sh            install (uses sudo when not root)
#   scripts/setup.sh --check    only report what is missing; exit 1 if anything is
set -euo pipefail

PACKAGES=(
  # toolchain
  g++ cmake ninja-build pkg-config git ca-certificates
  # libraries mamba-asr links
  libtorch-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libsndfile1-dev libsoxr-dev
  libopus-dev libogg-dev
  libsentencepiece-dev sentencepiece
  # an optimized BLAS for LibTorch's matrix products (libblas.so.3 is otherwise the reference
  # implementation: training measured 4.6x slower with it); the OpenMP build shares LibTorch's
  # OpenMP threads instead of starting its own
  libopenblas0-openmp
  # data-parallel CPU training: the headers of the Gloo inside libtorch_cpu
  libgloo-dev
  # tests: Catch2 v2, and the independent references the parity tests run
  catch2 python3 python3-torch python3-torchaudio python3-numpy
  # fuzzing (fuzz/, docs/reliability.md): clang with libFuzzer and the sanitizer runtimes
  clang-14 libclang-rt-14-dev
  # corpus synthesis for tests and the quick-start recipe
  espeak-ng fortunes-min fortunes sox
  # the generator's other engines, voices, codecs and text (docs/synth-corpus.md; the same list as
  # scripts/synth_deps.sh): festival with its kal and ked diphone voices and the evaluation-only HTS
  # voice, flite, Opus and GSM codecs, and text for sentences (fortune-anarchism, the King James
  # Bible, WordNet's usage examples)
  festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts flite opus-tools libgsm-tools
  fortune-anarchism bible-kjv bible-kjv-text wordnet-base
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#PACKAGES[@]} packages are installed"
  exit 0
fi
if [[ "${1:-}" == "--check" ]]; then
  echo "setup: missing packages: ${missing[*]}" >&2
  exit 1
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: run as root or install sudo" >&2; exit 1; }
  SUDO="sudo"
fi
echo "setup: installing ${missing[*]}"
started=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done in $(( $(date +%s) - started )) s"
