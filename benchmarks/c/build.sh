#!/usr/bin/env bash
# Builds the C baseline clients of the benchmarks (not part of the SwiftPM build):
#   benchmarks/c/build.sh [OUTDIR]     (default: .build/bench)
# Each benchmarks/c/NAME.c becomes OUTDIR/NAME, compiled with -O2 against libusb-1.0.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-.build/bench}"
mkdir -p "$out"
flags=$(pkg-config --cflags --libs libusb-1.0)
for source in benchmarks/c/*.c; do
  name=$(basename "$source" .c)
  # shellcheck disable=SC2086  # pkg-config output is a list of flags
  cc -O2 -Wall -Wextra -o "$out/$name" "$source" $flags
  echo "built $out/$name"
done
