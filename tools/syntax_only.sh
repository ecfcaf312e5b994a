#!/bin/sh
# Compiler launcher of the header self-tests (tests/CMakeLists.txt): each header's translation
# unit is checked by the compiler's front end (-fsyntax-only: parsed, templates and all, no code
# generated: it is never linked), and an empty object file stands for it so that the build tool
# sees the target made and rebuilds it only when a header changes (the depfile is still written).
out=""
prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out=$a
  prev=$a
done
"$@" -fsyntax-only || exit $?
[ -z "$out" ] || : > "$out"
