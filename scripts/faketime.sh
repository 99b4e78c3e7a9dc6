#!/usr/bin/env bash
# Makes sure Debian's libfaketime is here for the tests that run the real
# executables with their clocks set apart (api/tests/api/clocks.rs); prints
# the library's path. Installs the `faketime` package when it is missing.
# Everything else goes to stderr.
set -euo pipefail

found() {
  local path
  for path in "${TICKET_LIBFAKETIME:-}" \
    /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 \
    /usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1; do
    if [ -n "$path" ] && [ -f "$path" ]; then
      echo "$path"
      return 0
    fi
  done
  path=$(dpkg -L libfaketime 2>/dev/null | grep '/libfaketime\.so\.1$' | head -n 1 || true)
  [ -n "$path" ] && [ -f "$path" ] && echo "$path"
}

if ! found; then
  "$(dirname "${BASH_SOURCE[0]}")/debian.sh" faketime
  found
fi
