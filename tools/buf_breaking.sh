#!/usr/bin/env bash
# `buf breaking` against the contracts this branch started from: the merge-base with main on a
# branch, the previous commit on main itself (a fresh CI clone has only main checked out). The
# base is read from git's history, so no committed descriptor can go stale.
set -euo pipefail
cd "$(dirname "$0")/.."
BUF=${BUF:-.venv/bin/buf}
head=$(git rev-parse HEAD)
base=""
if git rev-parse --verify --quiet main >/dev/null; then
  base=$(git merge-base HEAD main)
fi
if [ -z "$base" ] || [ "$base" = "$head" ]; then
  base=$(git rev-parse --verify --quiet HEAD~1 || true)
fi
if [ -z "$base" ]; then
  echo "buf breaking: no earlier commit to compare with (a single-commit or shallow clone); fetch more history" >&2
  exit 1
fi
echo "buf breaking against ${base:0:12}"
"$BUF" breaking --against ".git#ref=${base}"
