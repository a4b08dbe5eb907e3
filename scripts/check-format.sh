#!/usr/bin/env bash
# Fails (listing the files) when a C++ source differs from what clang-format
# (.clang-format) writes. Fix with:
#   git ls-files '*.cc' '*.h' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "SKIPPED: clang-format is not installed (bash scripts/install-deps.sh installs it)"
  exit 0
fi
files=$(find apps lib tests bench -name '*.cc' -o -name '*.h' | sort)
bad=()
for f in $files; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "not clang-formatted (run: clang-format -i FILE): ${bad[*]}"
  exit 1
fi
echo "$(echo "$files" | wc -w) sources clang-formatted"
