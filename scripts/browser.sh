#!/usr/bin/env bash
# Makes sure a headless Chromium and its WebDriver are here for the page's
# tests and benchmark; prints the chromedriver's path. Uses one already on
# the PATH (or GitHub's runners' $CHROMEWEBDRIVER), else installs Debian's
# `chromium` and `chromium-driver`. Everything else goes to stderr.
set -euo pipefail

found() {
  if [ -n "${TICKET_CHROMEDRIVER:-}" ] && [ -x "$TICKET_CHROMEDRIVER" ]; then
    echo "$TICKET_CHROMEDRIVER"
  elif command -v chromedriver >/dev/null 2>&1; then
    command -v chromedriver
  elif [ -n "${CHROMEWEBDRIVER:-}" ] && [ -x "$CHROMEWEBDRIVER/chromedriver" ]; then
    echo "$CHROMEWEBDRIVER/chromedriver"
  else
    return 1
  fi
}

# A Korean font, so that the page's Korean reads in screenshots (the
# tests read text, not pixels: without one they still pass).
if command -v fc-list >/dev/null 2>&1 && [ -z "$(fc-list :lang=ko 2>/dev/null)" ]; then
  "$(dirname "${BASH_SOURCE[0]}")/debian.sh" fonts-nanum ||
    echo "browser: no Korean font; Korean screenshots show boxes" >&2
fi
if ! found; then
  "$(dirname "${BASH_SOURCE[0]}")/debian.sh" chromium chromium-driver
  found
fi
