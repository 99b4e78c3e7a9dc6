#!/usr/bin/env bash
# The README's screenshots (the seat map, a hold being paid, the tickets,
# the operator's sale view, a hold paid on a 360 px phone, the door's
# camera), which the page's browser tests save under target/screenshots/,
# copied to docs/screenshots/.
#   scripts/screenshots.sh        runs the browser tests, then copies
#   scripts/screenshots.sh copy   copies what a test run left (make test does)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

README_SHOTS=(seat-map.png hold-being-paid.png tickets.png operator.png
  phone-en-me-reservations-paying.png door-camera.png)
shots="${TICKET_SCREENSHOTS:-$PWD/target/screenshots}"

if [ "${1:-}" != copy ]; then
  DATABASE_URL="$(scripts/db.sh)"
  export DATABASE_URL
  TICKET_CHROMEDRIVER="$(scripts/browser.sh)"
  export TICKET_CHROMEDRIVER
  TICKET_AXE="$(scripts/axe.sh)"
  export TICKET_AXE
  TICKET_LOCALSTRIPE_PYTHON="$(scripts/localstripe.sh)"
  export TICKET_LOCALSTRIPE_PYTHON
  TICKET_SMTP_PYTHON="$(scripts/smtp.sh)"
  export TICKET_SMTP_PYTHON
  export TICKET_SCREENSHOTS="$shots"
  rm -rf "$shots"
  cargo test --locked -p ticket-api --test browser
fi
mkdir -p docs/screenshots
for shot in "${README_SHOTS[@]}"; do
  cp "$shots/$shot" docs/screenshots/
done
ls -l docs/screenshots
