#!/usr/bin/env bash
# The whole test suite: the Rust workspace against a real database
# (DATABASE_URL when set, otherwise the project's private server from
# scripts/db.sh; each integration test creates and drops a database of its
# own there) and a real headless Chromium for the page (scripts/browser.sh
# installs it when missing), then the Helm chart (scripts/chart-test.sh), then short runs of
# the k6 scenarios 1-3, 5 and 6 (scripts/k6.sh), the dashboard and alerts against a real
# Prometheus (scripts/monitoring.sh), a bounded fuzzing pass
# (scripts/fuzz.sh), then the fault tests (scripts/fault.sh, the Galera
# failover among them).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DATABASE_URL="$(scripts/db.sh)"
export DATABASE_URL
# The page's tests drive a real headless Chromium.
TICKET_CHROMEDRIVER="$(scripts/browser.sh)"
export TICKET_CHROMEDRIVER
# ... and check every view with axe-core (pinned, checked; tests only).
TICKET_AXE="$(scripts/axe.sh)"
export TICKET_AXE
# The clock tests run the real executables with their clocks set apart.
TICKET_LIBFAKETIME="$(scripts/faketime.sh)"
export TICKET_LIBFAKETIME
# The mail tests start a real SMTP server (aiosmtpd).
TICKET_SMTP_PYTHON="$(scripts/smtp.sh)"
export TICKET_SMTP_PYTHON
# The payment tests start a real Stripe-compatible server (localstripe).
TICKET_LOCALSTRIPE_PYTHON="$(scripts/localstripe.sh)"
export TICKET_LOCALSTRIPE_PYTHON
# README's walk is run as written.
command -v curl >/dev/null 2>&1 || scripts/debian.sh curl
command -v jq >/dev/null 2>&1 || scripts/debian.sh jq
status=0
cargo test --workspace --locked --no-fail-fast "$@" || status=$?
# The README's screenshots, as this run's browser tests took them.
scripts/screenshots.sh copy || status=$?
# The Helm chart, rendered and validated by real Helm and Kubernetes schemas.
scripts/chart-test.sh || status=$?
# Short versions of the k6 scenarios 1-3, 5 and 6 against a private stack: they fail
# on any broken invariant or threshold.
# Each scenario's API and worker peak memory, against the chart's limits.
export TICKET_MEMORY_LOG=".local/k6/memory-$$.log"
mkdir -p .local/k6 && : >"$TICKET_MEMORY_LOG"
k6_passed=0 k6_failed=0
k6() {
  if env "$@"; then k6_passed=$((k6_passed + 1)); else k6_failed=$((k6_failed + 1)); status=1; fi
}
k6 TICKET_DURATION=10s TICKET_VUS=50 scripts/k6.sh contention
k6 TICKET_USERS=100 TICKET_SEATS=20 scripts/k6.sh distributed
k6 scripts/k6.sh cancel-rebook
k6 TICKET_USERS=200 TICKET_SEATS=60 TICKET_VUS=20 TICKET_DURATION=12s TICKET_HOLD_SECONDS=2 scripts/k6.sh checkout
k6 TICKET_DURATION=12s scripts/k6.sh waiting-list
cat "$TICKET_MEMORY_LOG"
echo "k6: $k6_passed passed, $k6_failed failed"
# The dashboard and the alerts against a real Prometheus scraping the
# checkout scenario: every panel returns data, every alert evaluates.
scripts/monitoring.sh || status=$?
# The whole API fuzzed from its OpenAPI document (schemathesis), bounded.
scripts/fuzz.sh || status=$?
# Faults under load, on a private server of their own: the database stopped
# for 10 s, the API SIGKILLed, every seat row locked past the lock-wait
# timeout, the worker SIGKILLed three times; then on a three-node Galera
# cluster behind HAProxy: the writing node SIGKILLed and restarted, and
# writes sent to every node at once.
scripts/fault.sh all || status=$?
exit "$status"
