#!/usr/bin/env bash
# Chart tests: Helm's Go SDK (helm-python-sdk) renders and lints the chart,
# kubernetes-validate checks every manifest against strict schemas, checkov
# reviews the rendered chart, promtool tests the alerts. The tools
# are installed by this script into an ignored virtualenv.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

venv="$(scripts/venv.sh 'helm-python-sdk==0.2.2' 'kubernetes-validate==1.37.0' 'pyyaml>=6' 'pytest>=8')"
# checkov pins its own versions of common packages: a virtualenv of its own.
checkov="$(TICKET_VENV=.local/venv-checkov scripts/venv.sh 'checkov==3.2.533')"
# promtool (Debian's prometheus package) checks and unit-tests the alerts.
command -v promtool >/dev/null 2>&1 || scripts/debian.sh prometheus
CHECKOV_BIN="$PWD/$checkov/bin/checkov" "$venv/bin/python" -m pytest -q charts/tests "$@"
