#!/bin/sh
# Builds the spawn helper (native/spawn-helper.c) into dist/native/spawn-helper; run by `prepare`.
# Without a working C compiler the hook server starts commands with child_process.spawn instead
# (correct, but about 3x slower per command), so this never fails the install.
cd "$(dirname "$0")/.." || exit 0
out=dist/native/spawn-helper
mkdir -p dist/native
rm -f "$out"
cc=${CC:-cc}
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "webhook: no C compiler ($cc) found; commands will start through child_process.spawn (slower)."
  exit 0
fi
if ! "$cc" -O2 -Wall -o "$out" native/spawn-helper.c; then
  rm -f "$out"
  echo "webhook: the spawn helper did not compile (see above); commands will start through child_process.spawn (slower)."
fi
exit 0
