#!/usr/bin/env bash
# Chart tests: Helm's Go SDK (helm-python-sdk) renders and lints the chart,
# kubernetes-validate checks every manifest against strict schemas. The tools
# are installed by this script into an ignored virtualenv.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

venv=.local/venv
apt_install() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}
if [ ! -x "$venv/bin/python" ]; then
  command -v python3 >/dev/null 2>&1 || apt_install python3 python3-venv
  # Debian's python3 ships venv separately.
  if ! python3 -m venv "$venv" 2>/dev/null; then
    rm -rf "$venv"
    apt_install python3-venv
    python3 -m venv "$venv"
  fi
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check \
  'helm-python-sdk==0.2.2' 'kubernetes-validate==1.37.0' 'pyyaml>=6' 'pytest>=8'
"$venv/bin/python" -m pytest -q charts/tests "$@"
