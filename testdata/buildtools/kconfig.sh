#!/usr/bin/env bash
# kconfig.sh SRC FRAGMENT...: SRC's .config as `make tinyconfig` and then
# each FRAGMENT's CONFIG_ lines (y, m, n, a number or a string) make it,
# checked after olddefconfig: an option Kconfig refused is an error.
set -euo pipefail
src=$1; shift
frags=(); for f in "$@"; do frags+=("$(readlink -f "$f")"); done; set -- "${frags[@]}"
cd "$src"
make -s tinyconfig >/dev/null
for frag in "$@"; do
  grep '^CONFIG_' "$frag" | while IFS='=' read -r k v; do
    o=${k#CONFIG_}
    case $v in
      y) scripts/config --enable "$o" ;;
      m) scripts/config --module "$o" ;;
      n) scripts/config --disable "$o" ;;
      \"*) v=${v#\"}; scripts/config --set-str "$o" "${v%\"}" ;;
      *) scripts/config --set-val "$o" "$v" ;;
    esac
  done
done
make -s olddefconfig
for frag in "$@"; do
  grep '^CONFIG_' "$frag" | while IFS='=' read -r k v; do
    if [ "$v" = n ]; then
      ! grep -q "^$k=" .config || { echo "kconfig.sh: $k still set" >&2; exit 1; }
    else
      grep -qx "$k=$v" .config || { echo "kconfig.sh: $k=$v refused by Kconfig ($(grep "^$k=\|^# $k " .config))" >&2; exit 1; }
    fi
  done
done
