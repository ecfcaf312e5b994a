#!/usr/bin/env bash
# Checks that every C and C++ file follows .clang-format (clang-format 14, Debian 12's).
# Fix with: clang-format -i $(git ls-files '*.hpp' '*.cpp' '*.c' '*.inl' '*.cu')
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "check_format: clang-format not installed: skipped"
  exit 0
fi
git ls-files '*.hpp' '*.cpp' '*.c' '*.inl' '*.cu' | xargs clang-format --dry-run --Werror
echo "check_format: $(git ls-files '*.hpp' '*.cpp' '*.c' '*.inl' '*.cu' | wc -l) files follow .clang-format"
