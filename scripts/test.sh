#!/usr/bin/env bash
# scripts/test.sh — sets up, builds and runs the default test suite (what CI runs).
# Slow tests are tagged [.slow] and excluded; run them with build/tests/test_masr "[.slow]".
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure --parallel "$(nproc)" "$@"
