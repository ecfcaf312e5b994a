#!/bin/sh
# Compiler launcher of the header self-tests (tests/CMakeLists.txt): each header's translation
# unit is checked by the compiler's front end (-fsyntax-only: parsed, templates and all, no code
# generated: it is never linked), and an empty object file stands for it so that the build tool
# sees the target made and rebuilds it only when a header changes (the depfile is still written).
#
# VECBENCH_SYNTAX_CACHE (tools/test.sh sets it; unset: no cache): a folder of the checks that
# passed, each named by the hash of the compiler's version, the flags that are not paths and the
# preprocessed text without line markers (the headers' whole content after every #include and
# #define). A check that passed on the same text is not run again: ccache does this for objects but
# not for -fsyntax-only. The preprocessing itself (~10 % of a check's time) always runs, and
# writes the depfile.
out="" prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out=$a
  prev=$a
done
if [ -n "${VECBENCH_SYNTAX_CACHE:-}" ]; then
  cc=$1 flags="" drop=0 nokey=0
  for a do  # "$@" without "-o OUT" (the preprocessed text goes to a file); the flags for the key
    shift
    if [ "$drop" = 1 ]; then drop=0; continue; fi
    if [ "$nokey" = 1 ]; then
      nokey=0
    else
      case $a in
        -o) drop=1; continue ;;
        -isystem|-MT|-MF|-MQ|-include) nokey=1 ;;
        -I*|-M*|-c|/*|*.cpp) ;;
        *) flags="$flags $a" ;;
      esac
    fi
    set -- "$@" "$a"
  done
  text=$(mktemp) || exit 1
  trap 'rm -f "$text"' EXIT
  if ! "$@" -E -P -o "$text"; then
    "$@" -fsyntax-only
    exit $?
  fi
  key=$({ "$cc" -dumpfullversion; echo "$flags"; cat "$text"; } | sha256sum | cut -c1-32)
  if [ ! -f "$VECBENCH_SYNTAX_CACHE/$key" ]; then
    "$@" -fsyntax-only || exit $?
    mkdir -p "$VECBENCH_SYNTAX_CACHE" && : > "$VECBENCH_SYNTAX_CACHE/$key"
  fi
else
  "$@" -fsyntax-only || exit $?
fi
[ -z "$out" ] || : > "$out"
