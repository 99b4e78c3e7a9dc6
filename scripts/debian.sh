#!/usr/bin/env bash
# Installs Debian packages, with sudo unless root; output on stderr:
#   scripts/debian.sh PACKAGE...
# The one place the project's scripts install from (callers check first
# whether they need to).
set -euo pipefail
echo "debian: installing $*" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
