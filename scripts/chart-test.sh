#!/usr/bin/env bash
# Chart tests: Helm's Go SDK (helm-python-sdk) renders and lints the chart,
# kubernetes-validate checks every manifest against strict schemas. The tools
# are installed by this script into an ignored virtualenv.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

venv="$(scripts/venv.sh 'helm-python-sdk==0.2.2' 'kubernetes-validate==1.37.0' 'pyyaml>=6' 'pytest>=8')"
"$venv/bin/python" -m pytest -q charts/tests "$@"
