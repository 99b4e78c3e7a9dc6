#!/usr/bin/env bash
# Installs Debian's package PACKAGE when the command COMMAND is missing:
#   scripts/debian.sh COMMAND PACKAGE
# (the README's walk, run by the tests, uses curl and jq).
set -euo pipefail
command -v "$1" >/dev/null 2>&1 && exit 0
echo "debian: installing $2 for $1" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >&2
