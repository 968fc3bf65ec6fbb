#!/usr/bin/env bash
# modorder.sh DIR: the modules (.ko) under DIR, dependencies first, as
# modprobe would load them: each module's .modinfo depends= (no kmod
# tools needed).
set -euo pipefail
declare -A path deps done
for k in $(find "$1" -name '*.ko'); do
  n=$(basename "$k" .ko); n=${n//-/_}
  path[$n]=$k
  deps[$n]=$(objcopy -O binary --only-section=.modinfo "$k" /dev/stdout | tr '\0' '\n' | sed -n 's/^depends=//p' | tr ',' ' ')
done
left=${#path[@]}
while [ "$left" -gt 0 ]; do
  progress=0
  for n in "${!path[@]}"; do
    [ -n "${done[$n]:-}" ] && continue
    ok=1
    for d in ${deps[$n]}; do [ -n "${done[$d]:-}" ] || ok=0; done
    if [ $ok = 1 ]; then echo "${path[$n]}"; done[$n]=1; left=$((left-1)); progress=1; fi
  done
  [ $progress = 1 ] || { echo "modorder.sh: a dependency cycle or a missing module under $1" >&2; exit 1; }
done
