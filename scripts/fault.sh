#!/usr/bin/env bash
# Fault-injection tests against a real stack on a private database server of
# their own (.local/fault-db, so the test suite's server is never touched):
#
#   scripts/fault.sh db-outage    stop the database for OUTAGE_SECONDS (10)
#                                 while reservation requests keep coming
#
# Passes only if: while the database is down the API answers 503
# DATABASE_UNAVAILABLE with Retry-After (no 500, no request left hanging);
# both binaries recover on their own; every request that got a 201 is decided
# afterwards; and `ticket-api check` finds every invariant intact. Prints one
# summary line for docs/reliability.md. PROFILE=debug (default) or release.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

what="${1:?usage: scripts/fault.sh db-outage}"
[ "$what" = db-outage ] || { echo "unknown fault: $what" >&2; exit 2; }
outage="${OUTAGE_SECONDS:-10}"
rate="${RATE:-400}"
seconds="${LOAD_SECONDS:-25}"

profile="${PROFILE:-debug}"
cargo build --locked --bins $([ "$profile" = release ] && echo --release) >&2
bin="target/$profile"
work=.local/fault
mkdir -p "$work"

fault_db() { env -u DATABASE_URL TICKET_DB_DIR="$PWD/.local/fault-db" scripts/db.sh "$@"; }
# The status code of GET $1 on the API (no curl needed).
http_status() {
  local line
  exec 3<>"/dev/tcp/127.0.0.1/$port" || { echo 000; return; }
  printf 'GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n' "$1" >&3
  read -r -t 10 line <&3 || line=""
  exec 3<&-
  echo "$line" | awk '{print $2}'
}
server_url="$(fault_db)"
secret="fault-secret-fault-secret-fault-secret"
url="$(DATABASE_URL="$server_url" TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue \
  --users $((rate * seconds)) --seats 2000 --out "$work/lines")"

port=18280
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database >/dev/null 2>&1 || true
  fault_db stop 2>/dev/null || true
}
trap cleanup EXIT

# Limits off: the load comes from one address with thousands of users.
DATABASE_URL="$url" TICKET_AUTH_SECRET="$secret" TICKET_API_ADDR="127.0.0.1:$port" \
  TICKET_USER_REQUESTS_PER_SEC=0 TICKET_DB_ACQUIRE_TIMEOUT_MS=1000 RUST_LOG=warn \
  "$bin/ticket-api" >"$work/api.log" 2>&1 &
api_pid=$!
pids+=("$api_pid")
DATABASE_URL="$url" TICKET_WORKER_HEALTH_ADDR=127.0.0.1:0 RUST_LOG=warn \
  "$bin/ticket-worker" >"$work/worker.log" 2>&1 &
worker_pid=$!
pids+=("$worker_pid")
for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.1
done

"$bin/ticket-bench" load --url "http://127.0.0.1:$port" --lines "$work/lines" --rate "$rate" \
  --seconds "$seconds" --record "$work/acknowledged" --timeout-ms 10000 >"$work/load.out" &
load_pid=$!

# Let the load settle, then take the database away for the outage.
sleep 5
echo "fault: stopping the database for ${outage} s" >&2
fault_db stop
down_since=$(date +%s)
sleep 1
ready_during="$(http_status /readyz)"
sleep $((outage - 1))
fault_db >/dev/null
echo "fault: database back after $(($(date +%s) - down_since)) s" >&2

wait "$load_pid"
cat "$work/load.out"
DATABASE_URL="$url" "$bin/ticket-bench" wait-drained
status=0
kill -0 "$api_pid" && kill -0 "$worker_pid" || { echo "fault: a process died" >&2; status=1; }
ready_after="$(http_status /readyz)"
verdict="$(DATABASE_URL="$url" "$bin/ticket-bench" verify-decided --ids "$work/acknowledged")" || status=1
echo "$verdict"
DATABASE_URL="$url" RUST_LOG=warn "$bin/ticket-api" check || status=1

answers="$(grep '^answers:' "$work/load.out")"
# Only 201s and 503s: anything else (a 500, a hang) is a failure.
if grep -Eq '(^| )(5(0[0-24-9]|[1-9][0-9])|4[0-9][0-9])=' <<<"${answers%%(*}"; then
  echo "fault: unexpected answers: $answers" >&2
  status=1
fi
unavailable="$(sed -n 's/.* 503=\([0-9]*\).*/\1/p' <<<"$answers")"
with_retry="$(sed -n 's/.*Retry-After: \([0-9]*\)).*/\1/p' <<<"$answers")"
hung="$(sed -n 's/.*connection failed: \([0-9]*\).*/\1/p' <<<"$answers")"
if [ -z "$unavailable" ] || [ "$unavailable" = 0 ] || [ "$unavailable" != "$with_retry" ]; then
  echo "fault: expected 503s with Retry-After during the outage: $answers" >&2
  status=1
fi
[ "${hung:-0}" = 0 ] || { echo "fault: $hung requests got no answer" >&2; status=1; }
[ "$ready_during" = 503 ] || { echo "fault: /readyz during the outage: $ready_during" >&2; status=1; }
[ "$ready_after" = 200 ] || { echo "fault: /readyz after the outage: $ready_after" >&2; status=1; }
echo "db-outage (${outage} s, ${rate}/s for ${seconds} s): $answers; readyz during=$ready_during after=$ready_after; $verdict; $([ $status = 0 ] && echo PASSED || echo FAILED)"
exit "$status"
