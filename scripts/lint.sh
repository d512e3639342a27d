#!/usr/bin/env bash
# The lint entry point (CI's .ci/checks and the landing script run it): Biome's recommended rules as
# configured in biome.jsonc, over every source file; a warning fails it too, so none accumulate.
set -euo pipefail
cd "$(dirname "$0")/.."
exec npx --no-install biome lint --error-on-warnings --no-errors-on-unmatched .
