#!/usr/bin/env bash
# Runs the page's browser tests (which save screenshots of the seat map, the
# line, the hold, the lottery and the operator's view under
# target/screenshots/) and copies them to docs/screenshots/, where the README
# shows them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DATABASE_URL="$(scripts/db.sh)"
export DATABASE_URL
TICKET_CHROMEDRIVER="$(scripts/browser.sh)"
export TICKET_CHROMEDRIVER
export TICKET_SCREENSHOTS="$PWD/target/screenshots"
rm -rf "$TICKET_SCREENSHOTS"
cargo test --locked -p ticket-api --test browser
mkdir -p docs/screenshots
cp "$TICKET_SCREENSHOTS"/*.png docs/screenshots/
ls -l docs/screenshots
