#!/bin/sh
# Builds the native helpers into dist/native/; run at install (`npm ci`) and by `npm run build`.
#   spawn-helper (native/spawn-helper.c): starts the hook server's commands; without it they start through
#     child_process.spawn (correct, but about 3x slower per command).
#   sendfile-helper (native/sendfile-helper.c): the device's FTP downloads of large files with sendfile(2);
#     without it they go through Node (correct, more CPU).
# Without a working C compiler neither is built, so this never fails the install.
cd "$(dirname "$0")/.." || exit 0
mkdir -p dist/native
cc=${CC:-cc}
build() { # name, what is used without it
  out=dist/native/$1
  rm -f "$out"
  if ! command -v "$cc" >/dev/null 2>&1; then
    echo "framefi-system: no C compiler ($cc) found; $2."
  elif ! "$cc" -O2 -Wall -o "$out" "native/$1.c"; then
    rm -f "$out"
    echo "framefi-system: native/$1.c did not compile (see above); $2."
  fi
}
build spawn-helper "the hook server starts commands through child_process.spawn (slower)"
build sendfile-helper "the device sends large FTP downloads through Node (more CPU)"
exit 0
