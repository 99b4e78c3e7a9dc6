#!/usr/bin/env bash
# Makes sure a Python with aiosmtpd (Debian's python3-aiosmtpd) is here for
# the mail tests, which start a real SMTP server of their own
# (scripts/smtp-sink.py); prints the interpreter's path. Debian's package
# is for Debian's own Python (/usr/bin/python3), whatever else is first on
# the PATH. Everything else goes to stderr.
set -euo pipefail
has_aiosmtpd() { [ -n "$1" ] && [ -x "$1" ] && "$1" -c 'import aiosmtpd' 2>/dev/null; }
for python in "${TICKET_SMTP_PYTHON:-}" /usr/bin/python3; do
  if has_aiosmtpd "$python"; then
    echo "$python"
    exit 0
  fi
done
"$(dirname "${BASH_SOURCE[0]}")/debian.sh" python3 python3-aiosmtpd
has_aiosmtpd /usr/bin/python3
echo /usr/bin/python3
