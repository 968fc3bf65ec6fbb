#!/usr/bin/env bash
# secsizes.sh MODULE.ko: "NAME SIZE" for each section of the module that
# is loaded (SHF_ALLOC), as readelf lists them; the oracle's init dumps
# each one from the kernel's memory.
set -euo pipefail
readelf -SW "$1" | sed -n 's/^ *\[ *[0-9]*\] //p' | while read -r name type addr off size es flags rest; do
  case $flags in *A*) echo "$name $((16#$size))" ;; esac
done
