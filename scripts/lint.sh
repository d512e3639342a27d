#!/usr/bin/env bash
# The lint entry point (CI's .ci/checks and the landing script run it): the tree is formatted as
# biome.jsonc says (`npm run format` rewrites it), then Biome's recommended rules as configured
# there, over every source file; a warning fails it too, so none accumulate.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! npx --no-install biome format --no-errors-on-unmatched . >/tmp/varve-format-check.$$ 2>&1; then
  grep -E '^\S.*format|needs formatting|^\./|^[a-z].*\.(ts|mjs|json|jsonc)' /tmp/varve-format-check.$$ | head -20 || true
  tail -3 /tmp/varve-format-check.$$
  rm -f /tmp/varve-format-check.$$
  echo "lint: files above are not formatted: run \`npm run format\` and commit the result" >&2
  exit 1
fi
rm -f /tmp/varve-format-check.$$
exec npx --no-install biome lint --error-on-warnings --no-errors-on-unmatched .
