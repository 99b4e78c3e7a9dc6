#!/usr/bin/env bash
# Validates the GitHub Actions workflows against the published workflow
# schema (check-jsonschema's vendored copy: no network needed at run time).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="$(scripts/venv.sh 'check-jsonschema==0.33.3')"
"$venv/bin/check-jsonschema" --builtin-schema vendor.github-workflows .github/workflows/*.yml
