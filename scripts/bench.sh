#!/usr/bin/env bash
# Benchmarks for docs/benchmarks.md.
# Usage: scripts/bench.sh [drain|fairness|enqueue|clean|detail|mixed|latency|steps|cpu|tracing|sampled|retention|checkout|intake|profile|open|open-polls|open-streams|open-availability|page|pow-page|door|payments|seating-plan|best|standing|mail|accounts|million|fans-open|many-concerts|storm|staff|all]
# Runs against the private database (or DATABASE_URL), each measurement in a
# fresh database, with release builds; installs wrk from Debian if missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

what="${1:-all}"
DATABASE_URL="$(scripts/db.sh)"
export DATABASE_URL
# The storm is a test (a debug build, with its worker processes beside it).
[ -n "${TICKET_BENCH_BIN:-}" ] || [ "$what" = storm ] ||
  cargo build --release --locked -p ticket-bench -p ticket-api -p ticket-worker >&2
# TICKET_BENCH_BIN: binaries built elsewhere (an older commit, for a before/after pair).
bin="${TICKET_BENCH_BIN:-target/release}"
work=.local/bench
mkdir -p "$work"
secret="bench-secret-bench-secret-bench-secret"
# Extra environment of the API in enqueue_run (none by default).
api_env=()

# Free ports and waiting for a listener (stack_free_port, stack_wait_for).
source scripts/lib/stack.sh

# Starts the API on a prepared database (with extra VAR=value environment
# after the URL); sets api_pid and api_url.
start_api() {
  local url="$1" port
  shift
  stack_free_port 18080
  env "$@" DATABASE_URL="$url" TICKET_AUTH_SECRET="$secret" TICKET_CODE_KEYS="$stack_code_keys" TICKET_API_ADDR="127.0.0.1:$port" \
    TICKET_DB_MAX_CONNECTIONS="${TICKET_DB_MAX_CONNECTIONS:-64}" RUST_LOG=warn "$bin/ticket-api" &
  api_pid=$!
  api_url="http://127.0.0.1:$port"
  stack_wait_for "$port"
}

stop() { kill "$@" 2>/dev/null || true; wait "$@" 2>/dev/null || true; }

# An OTLP/HTTP sink that discards what it gets; sets sink_pid and sink_port.
start_sink() {
  local port
  stack_free_port 18080
  "$bin/ticket-bench" otlp-sink --addr "127.0.0.1:$port" &
  sink_pid=$!
  sink_port=$port
  stack_wait_for "$port"
}

ensure_wrk() {
  command -v wrk >/dev/null 2>&1 || scripts/debian.sh wrk
}

drain() {
  echo "## drain: 100,000 requests over 10,000 seats (three runs each; this kind of VM is noisy)"
  local workers run
  for workers in 1 2; do
    for run in 1 2 3; do
      RUST_LOG=warn "$bin/ticket-bench" drain --requests 100000 --seats 10000 --workers "$workers"
    done
  done
  echo "## baseline (--mode=per-request: the original's algorithm, 50 rows every 250 ms; 2,000 requests)"
  RUST_LOG=warn "$bin/ticket-bench" drain --requests 2000 --seats 200 --workers 1 --mode per-request
}

# Checkout: orders of four seats against one-seat requests (same number of
# requests, four times the seats, so that every seat is wanted as often),
# alternating; then the expiry sweep and the webhook relay, each alone.
checkout() {
  echo "## drain: 100,000 one-seat requests / 10,000 seats against 100,000 four-seat orders / 40,000 seats (alternating, 2 pairs)"
  local run
  for run in 1 2; do
    RUST_LOG=warn "$bin/ticket-bench" drain --requests 100000 --seats 10000 --workers 1
    RUST_LOG=warn "$bin/ticket-bench" drain --requests 100000 --seats 40000 --workers 1 --seats-per-order 4
  done
  echo "## expiry sweep: 20,000 ended holds of 2 seats"
  RUST_LOG=warn "$bin/ticket-bench" expiry --holds 20000 --seats-per-hold 2 --sweepers 1
  RUST_LOG=warn "$bin/ticket-bench" expiry --holds 20000 --seats-per-hold 2 --sweepers 2
  echo "## webhooks: 30,000 events to a local receiver"
  RUST_LOG=warn "$bin/ticket-bench" webhooks --events 30000 --relays 1
  RUST_LOG=warn "$bin/ticket-bench" webhooks --events 30000 --relays 2
}

# One enqueue run: wrk for 15 s against a fresh database, no worker; extra
# VAR=value arguments go to wrk's script (noise, keyed baseline, sampled
# flags), and those in the array api_env (if set) to the API.
# enqueue_users and enqueue_lines (prepare-enqueue's arguments: what the
# lines ask for) change who asks and for what.
enqueue_users=20000
enqueue_lines=()
enqueue_run() {
  local url
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue --users "$enqueue_users" --seats 10000 \
    "${enqueue_lines[@]}" --out "$work/lines")"
  start_api "$url" "${api_env[@]}"
  env "$@" TICKET_BENCH_LINES="$work/lines" TICKET_BENCH_THREADS=2 \
    wrk -t2 -c64 -d15s --latency -s bench/wrk/enqueue.lua "$api_url"
  stop "$api_pid"
  # Every 201 was sent after its commit: the rows must all be there (wrk
  # stops counting with up to 64 requests still in flight).
  echo "queue rows committed: $(DATABASE_URL="$url" "$bin/ticket-bench" count-queue)"
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
}

enqueue() {
  ensure_wrk
  # Clean and noisy alternate (clean, noisy, noisy, clean): on this VM the
  # run after an idle spell is the fastest, and the server's purge of the
  # previous run's rows slows the next one.
  local noise
  for noise in 0 1 1 0; do
    if [ "$noise" = 1 ]; then
      echo "## enqueue with noise: 5 % second clicks (409), 1 % unknown seats (404)"
      enqueue_run TICKET_BENCH_KEYED=0 TICKET_BENCH_DUPLICATES=0.05 TICKET_BENCH_UNKNOWN=0.01
    else
      echo "## enqueue: POST /api/reservations, wrk, 64 connections, 15 s, no worker running"
      enqueue_run TICKET_BENCH_KEYED=0
    fi
  done
  echo "## enqueue baseline: every request with its own Idempotency-Key (one transaction each)"
  enqueue_run TICKET_BENCH_KEYED=1
}

# Issue 59: requests by count and keyed requests through the enqueue
# batcher, each against exact seats in the same run. First at a constant
# offered rate (open loop, RATE/s for SECONDS_RUN s, one user a line):
# exact seats, requests by count (best two seats and two standing places,
# taking turns), and a mixed line (half exact, a quarter of each by count);
# the accepted rate and the p99 of the answers. Then flat out (wrk, 64
# connections, 15 s, 200,000 users so that no request by count is a
# second of its user's): exact, best available, standing, and exact with
# an Idempotency-Key each. INTAKE_OPEN and INTAKE_FLAT name fewer kinds
# (none: that part is left out).
intake_run() {
  local rate="$1" seconds="$2" url
  shift 2
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue --users $((rate * seconds)) \
    --seats $((rate * seconds / 10)) "$@" --out "$work/lines")"
  start_api "$url"
  "$bin/ticket-bench" load --url "$api_url" --lines "$work/lines" --rate "$rate" --seconds "$seconds" \
    --connections 64
  stop "$api_pid"
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
}

intake() {
  ensure_wrk
  local rate="${RATE:-3000}" seconds="${SECONDS_RUN:-15}" run kind
  echo "## intake by kind of request ($(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs)"
  for run in 1 2; do
    for kind in ${INTAKE_OPEN:-exact by-count mixed}; do
      echo "intake at ${rate}/s offered, $kind (run $run):"
      case "$kind" in
        exact) intake_run "$rate" "$seconds" ;;
        by-count) intake_run "$rate" "$seconds" --best-every 1 ;;
        mixed) intake_run "$rate" "$seconds" --best-every 2 ;;
        none) ;;
      esac
    done
  done
  enqueue_users=200000
  for run in 1 2; do
    for kind in ${INTAKE_FLAT:-exact best standing keyed}; do
      echo "flat out, $kind (run $run):"
      case "$kind" in
        exact | keyed) enqueue_lines=() ;;
        best) enqueue_lines=(--best-every 1 --no-areas) ;;
        standing) enqueue_lines=(--best-every 1 --areas-only) ;;
        none) continue ;;
      esac
      enqueue_run TICKET_BENCH_KEYED=$([ "$kind" = keyed ] && echo 1 || echo 0)
    done
  done
}

# Where an exact enqueue's time goes (issue 59): perf samples of the whole
# machine (API, database, wrk) while wrk sends exact requests flat out for
# 15 s, by process, then the API's own by function (with its callers). The
# database's share is what its commit and statements cost.
enqueue_profile() {
  ensure_wrk
  command -v perf >/dev/null 2>&1 || scripts/debian.sh linux-perf
  local url data="$work/perf.data"
  echo "## where an exact enqueue's time goes ($(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs)"
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue --users 20000 --seats 10000 \
    --out "$work/lines")"
  start_api "$url"
  perf record -q -a -g -F 499 -o "$data" -- sleep 15 2>/dev/null &
  local perf_pid=$!
  TICKET_BENCH_LINES="$work/lines" TICKET_BENCH_THREADS=2 \
    wrk -t2 -c64 -d15s --latency -s bench/wrk/enqueue.lua "$api_url" | grep -E "Requests/sec|99%|answers"
  wait "$perf_pid" || true
  stop "$api_pid"
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
  echo "### CPU by process"
  perf report -i "$data" --no-children --sort comm --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -12
  echo "### the API, by function (self time)"
  perf report -i "$data" --no-children --comm tokio-rt-worker --sort sym --stdio -g none 2>/dev/null |
    grep -E '^ +[0-9]' | head -40
  echo "### the API, by function and its callees (children)"
  perf report -i "$data" --children --comm tokio-rt-worker --sort sym --stdio -g none 2>/dev/null |
    grep -E '^ +[0-9]' | grep -E 'ticket|sqlx|axum|hyper|serde|jsonwebtoken|ring|hmac|sha' | head -60
}

# Enqueue and two deciding workers at once over shuffled seats (every seat
# wanted by ten users, scattered over the run): the server's deadlock count
# before and after must not move.
mixed() {
  local rate="${RATE:-3000}" seconds="${SECONDS_RUN:-15}"
  echo "## enqueue + 2 workers: ${rate} requests/s for ${seconds} s over $((rate * seconds / 10)) shuffled seats"
  local url
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue --users $((rate * seconds)) \
    --seats $((rate * seconds / 10)) --shuffle --out "$work/lines")"
  start_api "$url"
  DATABASE_URL="$url" TICKET_WORKER_ID=w1 TICKET_WORKER_HEALTH_ADDR=127.0.0.1:0 RUST_LOG=warn "$bin/ticket-worker" &
  local w1=$!
  DATABASE_URL="$url" TICKET_WORKER_ID=w2 TICKET_WORKER_HEALTH_ADDR=127.0.0.1:0 RUST_LOG=warn "$bin/ticket-worker" &
  local w2=$!
  local before after
  before="$(DATABASE_URL="$url" "$bin/ticket-bench" deadlocks)"
  "$bin/ticket-bench" load --url "$api_url" --lines "$work/lines" --rate "$rate" --seconds "$seconds"
  DATABASE_URL="$url" "$bin/ticket-bench" wait-drained
  after="$(DATABASE_URL="$url" "$bin/ticket-bench" deadlocks)"
  stop "$w1" "$w2" "$api_pid"
  echo "Innodb_deadlocks before=$before after=$after (new: $((after - before)))"
  DATABASE_URL="$url" "$bin/ticket-api" check
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
}

# First come, first served across workers: 4 workers drain requests whose
# seats are shuffled over the whole queue; every seat must go to its
# earliest request (0 inversions).
fairness() {
  echo "## fairness: 50,000 requests, 5 per seat shuffled, 4 workers, batch 250"
  RUST_LOG=warn "$bin/ticket-bench" drain --requests 50000 --seats 10000 --workers 4 --batch-size 250 --layout shuffled
}

# Time to decision with one worker: RATE requests/s for SECONDS_RUN s, after
# WARMUP s at 1,000/s and beside HISTORY decided requests (both optional);
# prints the percentiles and the p99 of each second.
latency() {
  local rate="${RATE:-5000}" seconds="${SECONDS_RUN:-20}" history="${HISTORY:-0}" warmup="${WARMUP:-0}"
  echo "## time to decision: ${rate} requests/s for ${seconds} s, one worker, ${history} decided requests before, ${warmup} s warm-up"
  local url lines="$work/lines" worker_env=()
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue --users $((rate * seconds + warmup * 1000)) --seats 10000 --out "$work/lines")"
  # History (HISTORY rows, 40 days old, kept: the sweeper is off) makes the
  # queue a sale's table rather than a new one.
  if [ "$history" -gt 0 ]; then
    DATABASE_URL="$url" "$bin/ticket-bench" age-history --rows "$history"
    worker_env=(TICKET_RETENTION_DAYS=0)
  fi
  start_api "$url"
  env "${worker_env[@]}" DATABASE_URL="$url" RUST_LOG=warn "$bin/ticket-worker" &
  local worker_pid=$!
  # WARMUP seconds at 1,000/s first (default none), left out of the timings:
  # processes that have run a while, as on the day, and then the step.
  if [ "$warmup" -gt 0 ]; then
    head -n $((warmup * 1000)) "$work/lines" >"$work/warmup-lines"
    tail -n +$((warmup * 1000 + 1)) "$work/lines" >"$work/measured-lines"
    lines="$work/measured-lines"
    "$bin/ticket-bench" load --url "$api_url" --lines "$work/warmup-lines" --rate 1000 --seconds "$warmup" >/dev/null
    DATABASE_URL="$url" "$bin/ticket-bench" wait-drained
  fi
  "$bin/ticket-bench" load --url "$api_url" --lines "$lines" --rate "$rate" --seconds "$seconds" \
    --connections "${CONNECTIONS:-0}"
  # Let the worker finish what is queued, then read the timings from the rows.
  DATABASE_URL="$url" "$bin/ticket-bench" wait-drained
  stop "$worker_pid" "$api_pid"
  DATABASE_URL="$url" "$bin/ticket-bench" latency --skip-first $((warmup * 1000))
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
}

# CPU time per request of the API, the worker and the database over one
# latency run (RATE, SECONDS_RUN; 3,000/s for 15 s by default), from just
# before the load to the last decision, from /proc/<pid>/stat.
cpu_per_request() {
  local rate="${RATE:-3000}" seconds="${SECONDS_RUN:-15}" url db_pid
  echo "## CPU per request: ${rate} requests/s for ${seconds} s, one worker"
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue --users $((rate * seconds)) --seats 10000 --out "$work/lines")"
  start_api "$url"
  DATABASE_URL="$url" RUST_LOG=warn "$bin/ticket-worker" &
  local worker_pid=$!
  db_pid="$(cat .local/db/mysqld.pid 2>/dev/null || true)"
  ticks() { [ -n "$1" ] && [ -r "/proc/$1/stat" ] && awk '{print $14 + $15}' "/proc/$1/stat" || echo 0; }
  local before=("$(ticks "$api_pid")" "$(ticks "$worker_pid")" "$(ticks "$db_pid")")
  "$bin/ticket-bench" load --url "$api_url" --lines "$work/lines" --rate "$rate" --seconds "$seconds"
  DATABASE_URL="$url" "$bin/ticket-bench" wait-drained
  local after=("$(ticks "$api_pid")" "$(ticks "$worker_pid")" "$(ticks "$db_pid")")
  stop "$worker_pid" "$api_pid"
  DATABASE_URL="$url" "$bin/ticket-bench" latency
  local hz names=(api worker database) i
  hz="$(getconf CLK_TCK)"
  for i in 0 1 2; do
    awk -v n="${names[$i]}" -v a="${before[$i]}" -v b="${after[$i]}" -v hz="$hz" -v r="$((rate * seconds))" \
      'BEGIN { printf "%s: %.2f s CPU, %.0f us per request\n", n, (b - a) / hz, (b - a) / hz / r * 1e6 }'
  done
  [ -n "$db_pid" ] || echo "(database not the private server: its CPU is not measured)"
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
}

# The highest steady rate whose time to decision stays within p99 100 ms:
# the latency run at rising rates, in one invocation (RATES, SECONDS_RUN).
latency_steps() {
  local rate
  for rate in ${RATES:-1000 2000 3000 4000 5000}; do
    RATE="$rate" SECONDS_RUN="${SECONDS_RUN:-10}" latency
  done
}

# The same drain and enqueue runs with tracing off (OTEL_SDK_DISABLED) and on
# at the default sampling, exporting over OTLP/HTTP to a local sink; runs
# alternate so that the VM's drift hits both alike.
tracing_overhead() {
  ensure_wrk
  start_sink
  local off="OTEL_SDK_DISABLED=true" on="OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$sink_port"
  local sampled
  for sampled in 0.1 1.0; do
    echo "## tracing overhead: drain, 100,000 requests over 10,000 seats, one worker, ${sampled} of the rows' traces sampled"
    for run in 1 2 3; do
      for mode in off on; do
        echo "### tracing $mode"
        env "${!mode}" RUST_LOG=warn "$bin/ticket-bench" drain --requests 100000 --seats 10000 --workers 1 --sampled "$sampled"
      done
    done
  done
  echo "## tracing overhead: enqueue, wrk, 64 connections, 15 s"
  for run in 1 2 3; do
    for mode in off on; do
      echo "### tracing $mode"
      api_env=("${!mode}")
      enqueue_run TICKET_BENCH_KEYED=0
      api_env=()
    done
  done
  stop "$sink_pid"
}

# Time to decision while the workers' sweeper removes history past the
# retention (HISTORY rows, 40 days old), against the same run with the
# sweeper off (TICKET_RETENTION_DAYS=0), alternating: the sweeper must not
# slow the hot path.
retention_cost() {
  local rate="${RATE:-3000}" seconds="${SECONDS_RUN:-20}" history="${HISTORY:-300000}" run days url
  for run in 1 2; do
    for days in 0 30; do
      echo "## time to decision at ${rate}/s for ${seconds} s beside ${history} expired requests; TICKET_RETENTION_DAYS=${days}"
      url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue --users $((rate * seconds)) --seats 10000 --out "$work/lines")"
      DATABASE_URL="$url" "$bin/ticket-bench" age-history --rows "$history"
      start_api "$url"
      DATABASE_URL="$url" TICKET_RETENTION_DAYS="$days" RUST_LOG=warn "$bin/ticket-worker" &
      local worker_pid=$!
      "$bin/ticket-bench" load --url "$api_url" --lines "$work/lines" --rate "$rate" --seconds "$seconds"
      DATABASE_URL="$url" "$bin/ticket-bench" wait-drained
      stop "$worker_pid" "$api_pid"
      DATABASE_URL="$url" "$bin/ticket-bench" latency
      echo "queue rows left: $(DATABASE_URL="$url" "$bin/ticket-bench" count-queue) (of $((rate * seconds + history)))"
      DATABASE_URL="$url" "$bin/ticket-bench" drop-database
    done
  done
}

# One clean enqueue run (for before/after pairs with TICKET_BENCH_BIN).
enqueue_clean() {
  ensure_wrk
  echo "## enqueue: POST /api/reservations, wrk, 64 connections, 15 s, no worker running (${bin})"
  enqueue_run TICKET_BENCH_KEYED=0
}

# Issue 60: what the permission checks and the audit entries cost: a fan's
# enqueue and status polls (no permission check: their own), the public
# availability, and an operator's PATCH of a concert (the permission read
# and, since issue 60, an audit entry in its transaction). Run once per
# build, alternating (TICKET_BENCH_BIN=<old>/release for the before).
staff_costs() {
  ensure_wrk
  enqueue_clean
  open_polls
  local url token
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue --users 1 --seats 10000 --out "$work/staff-lines")"
  start_api "$url" TICKET_USER_REQUESTS_PER_SEC=0 TICKET_ANONYMOUS_REQUESTS_PER_SEC=0 \
    TICKET_DEV_MODE=true TICKET_ADMIN_NICKNAME=bench TICKET_ADMIN_PASSWORD=bench-password-1234
  echo "## GET /api/concerts/1/availability, 10,000 seats, wrk, 64 connections, 10 s (${bin})"
  wrk -t2 -c64 -d10s --latency -H 'Accept-Encoding: gzip' "$api_url/api/concerts/1/availability" | grep -E "Requests/sec|50%|99%"
  token="$(curl -sf -H 'Content-Type: application/json' -d '{"nickName":"bench","password":"bench-password-1234"}' \
    "$api_url/api/auth/login" | sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')"
  echo "## PATCH /api/concerts/1 as the admin, a new title each, wrk, 8 connections, 10 s (${bin})"
  TICKET_BENCH_TOKEN="$token" wrk -t2 -c8 -d10s --latency -s bench/wrk/patch-concert.lua "$api_url" |
    grep -E "Requests/sec|50%|99%|Non-2xx"
  stop "$api_pid"
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
  # Refunds by the admin: the client is this build's (the older has no
  # such command), the API and worker those of $bin.
  export TICKET_ADMIN_NICKNAME=bench TICKET_ADMIN_PASSWORD=bench-password-1234
  door_stack "$bin" staff
  echo "## refunds by the admin of orders paid by hand, 500 orders of 2 seats, 8 at a time (${bin})"
  target/release/ticket-bench refunds --url "$api_url" --holds 500 --seats 2 --concurrency 8
  stop "$api_pid" "$worker_pid"
  DATABASE_URL="$door_url" "$bin/ticket-bench" drop-database
}

# The concert's detail, which the page reads on every visit, for a concert
# of 100,000 seats: its counts come from the availability snapshot (issue
# 27), not from a count over every seat per request.
concert_detail() {
  ensure_wrk
  local url
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue --users 1 --seats 100000 --out "$work/detail-lines")"
  start_api "$url" TICKET_USER_REQUESTS_PER_SEC=0 TICKET_ANONYMOUS_REQUESTS_PER_SEC=0
  # A fresh database: the concert is the first.
  curl -sf "$api_url/api/concerts/1" >/dev/null
  echo "## GET /api/concerts/{id}, 100,000 seats, wrk, 64 connections, 10 s (${bin})"
  wrk -t2 -c64 -d10s --latency "$api_url/api/concerts/1"
  stop "$api_pid"
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
}

# Enqueue with tracing exported, every request's traceparent asking to be
# sampled (as an outsider could send) against none asking, alternating: the
# caller's flag is obeyed only within TICKET_CALLER_SAMPLED_TRACES_PER_SEC.
caller_sampled() {
  ensure_wrk
  start_sink
  local run flag
  for run in 1 2; do
    for flag in 0 1; do
      echo "## enqueue, tracing exported, every request sampled by its caller: $flag"
      api_env=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink_port")
      enqueue_run TICKET_BENCH_KEYED=0 TICKET_BENCH_SAMPLED="$flag"
      api_env=()
    done
  done
  stop "$sink_pid"
}

# Ticket-open day (issue 15): status polls against a long line, decisions
# pushed over Server-Sent Events, and the seat availability while seats sell.
metric() { curl -s "$1/metrics" | awk -v name="$2" '$1 == name { print $2 }'; }

open_polls() {
  local url
  echo "## status polls: 20,000 open requests, 2,000 polls/s for 20 s (open loop), no worker"
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue --users 20000 --seats 10000 --queued --out "$work/open-lines")"
  start_api "$url" TICKET_USER_REQUESTS_PER_SEC=0
  "$bin/ticket-bench" load --status --url "$api_url" --lines "$work/open-lines" --rate 2000 --seconds 20
  stop "$api_pid"
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
}

open_streams() {
  local url
  local batch
  # decidedAt is taken when the deciding transaction starts: with batches of
  # 100 it is within a few ms of the commit; with the default 1,000 the time
  # measured includes most of the transaction.
  for batch in 1000 100; do
    echo "## event streams: 10,000 on one API instance while a worker decides their requests (10,000 over 2,000 seats, batches of $batch)"
    url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue --users 10000 --seats 2000 --queued --shuffle --out "$work/stream-lines")"
    start_api "$url" TICKET_USER_REQUESTS_PER_SEC=0
    DATABASE_URL="$url" RUST_LOG=warn "$bin/ticket-bench" streams --url "$api_url" --lines "$work/stream-lines" \
      --streams 10000 --api-pid "$api_pid" --batch-size "$batch"
    stop "$api_pid"
    DATABASE_URL="$url" "$bin/ticket-bench" drop-database
  done
}

open_availability() {
  local url worker_pid load_pid before after rate
  ensure_wrk
  echo "## availability: wrk, 64 connections, on a 50,000-seat concert, idle and while its seats sell (one worker)"
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue --users 20000 --seats 50000 --shuffle --out "$work/sell-lines")"
  start_api "$url" TICKET_USER_REQUESTS_PER_SEC=0 TICKET_ANONYMOUS_REQUESTS_PER_SEC=0
  env DATABASE_URL="$url" TICKET_WORKER_HEALTH_ADDR=127.0.0.1:0 RUST_LOG=warn "$bin/ticket-worker" &
  worker_pid=$!
  local availability="$api_url/api/concerts/1/availability"
  echo "bytes per answer before any sale: gzip $(curl -s -H 'Accept-Encoding: gzip' -o /dev/null -w '%{size_download}' "$availability"), plain $(curl -s -o /dev/null -w '%{size_download}' "$availability")"
  echo "### nothing sells (the baseline of this run), 10 s"
  wrk -t2 -c64 -d10s --latency -H 'Accept-Encoding: gzip' "$availability"
  # The first 5,000 lines sell at 250/s, the next 15,000 at 1,000/s.
  split -l 5000 -a 1 "$work/sell-lines" "$work/sell-part-"
  cat "$work/sell-part-b" "$work/sell-part-c" "$work/sell-part-d" >"$work/sell-lines-fast"
  for rate in 250 1000; do
    local lines="$work/sell-part-a"
    [ "$rate" = 1000 ] && lines="$work/sell-lines-fast"
    echo "### while seats sell at $rate requests/s, 15 s"
    before="$(metric "$api_url" ticket_api_availability_queries_total)"
    "$bin/ticket-bench" load --url "$api_url" --lines "$lines" --rate "$rate" --seconds 15 >"$work/sell.log" &
    load_pid=$!
    wrk -t2 -c64 -d15s --latency -H 'Accept-Encoding: gzip' "$availability"
    wait "$load_pid"
    after="$(metric "$api_url" ticket_api_availability_queries_total)"
    cat "$work/sell.log"
    echo "availability reads of the database during the run: $((after - before)) (about 15 s)"
    echo "seats sold so far: $(curl -s "$api_url/api/concerts/1" | sed -n 's/.*"reservedSeats":\([0-9]*\).*/\1/p')"
  done
  stop "$worker_pid" "$api_pid"
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
}

ticket_open() { open_polls; open_streams; open_availability; }

# A million in one line (issue 30): the same measurements on a line of
# 20,000 (the baseline of the run) and of 1,000,000, each with two API
# instances and one worker on a fresh database.
million_line() {
  local n="$1" url api1_pid api1_url worker_pid
  # MILLION_BEST=1: every request asks for the best two seats (issue 47).
  local best=()
  [ "${MILLION_BEST:-0}" = 1 ] && best=(--best)
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" million-prepare --requests "$n" "${best[@]}")"
  local limits=(TICKET_USER_REQUESTS_PER_SEC=0 TICKET_ANONYMOUS_REQUESTS_PER_SEC=0 TICKET_MAX_OPEN_REQUESTS_PER_USER=0)
  start_api "$url" "${limits[@]}"
  api1_pid=$api_pid api1_url=$api_url
  start_api "$url" "${limits[@]}"
  env DATABASE_URL="$url" TICKET_WORKER_HEALTH_ADDR=127.0.0.1:0 RUST_LOG=warn "$bin/ticket-worker" &
  worker_pid=$!
  local status=0
  DATABASE_URL="$url" TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" million --requests "$n" \
    --url "$api1_url" --url "$api_url" --api-pid "$api1_pid" --api-pid "$api_pid" \
    --through-api "${MILLION_THROUGH_API:-100000}" --follow-sale "${MILLION_FOLLOW_SALE:-0}" \
    --sweep-seconds "${MILLION_SWEEP:-0}" "${best[@]}" || status=$?
  stack_peak_memory "million $n: API 1" "$api1_pid" api || status=1
  stack_peak_memory "million $n: API 2" "$api_pid" api || status=1
  stack_peak_memory "million $n: worker" "$worker_pid" worker || status=1
  stop "$worker_pid" "$api1_pid" "$api_pid"
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
  return "$status"
}

# Many concerts viewed at once (issue 30): status polls over one concert's
# open requests, then over a thousand concerts' (20 each), on one instance.
many_concerts() {
  local url
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" many-concerts-prepare --concerts "${CONCERTS:-1000}")"
  start_api "$url" TICKET_USER_REQUESTS_PER_SEC=0 TICKET_ANONYMOUS_REQUESTS_PER_SEC=0
  local status=0
  DATABASE_URL="$url" TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" many-concerts --url "$api_url" --api-pid "$api_pid" || status=$?
  stop "$api_pid"
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
  return "$status"
}

# Enqueue while each user's open requests pile up in other concerts (issue
# 30): 20 users, 10 concerts of 100 seats, nothing deciding; the rate of
# each concert's part against the first (nothing open yet).
fans_open() {
  local url
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" fans-open-prepare --migrate-with "$bin/ticket-api")"
  start_api "$url" TICKET_USER_REQUESTS_PER_SEC=0 TICKET_ANONYMOUS_REQUESTS_PER_SEC=0 TICKET_MAX_OPEN_REQUESTS_PER_USER=0
  local status=0
  DATABASE_URL="$url" TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" fans-open --url "$api_url" || status=$?
  stop "$api_pid"
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
  return "$status"
}

million() {
  echo "## a million in one line ($(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs)"
  million_line "${MILLION_BASELINE:-20000}"
  million_line "${MILLION_REQUESTS:-1000000}"
}

# The proof of work as the page solves it (ALTCHA's widget in Web Workers)
# in headless Chromium, per level, each solution accepted by the API.
# Tickets and the door (issue 31). The confirm path before and after tickets
# in the same run: DOOR_BEFORE_BIN names a build without them (an older
# commit's target/release), each build on a database of its own migrated by
# itself; then check-ins with 8 scanners and a code verified offline in
# Chromium, on this build.
door_stack() {
  local build="$1" name="$2"
  # Extra environment for the API and the worker (payments' Stripe settings).
  local -a extra=("${@:3}")
  # ticket_test_*: what `ticket-bench drop-database` agrees to drop.
  stack_database "$DATABASE_URL" "ticket_test_bench_door_${name}_$$"
  door_url="$database_url"
  DATABASE_URL="$door_url" RUST_LOG=warn "$build/ticket-api" migrate
  stack_free_port 18080
  env DATABASE_URL="$door_url" TICKET_AUTH_SECRET="$secret" TICKET_CODE_KEYS="$stack_code_keys" \
    TICKET_API_ADDR="127.0.0.1:$port" TICKET_DEV_MODE=true TICKET_ADMIN_NICKNAME=bench \
    TICKET_ADMIN_PASSWORD=bench-password-1234 "${stack_limits_off[@]}" \
    TICKET_MAX_OPEN_REQUESTS_PER_USER=100000 RUST_LOG=warn "${extra[@]}" "$build/ticket-api" &
  api_pid=$!
  env DATABASE_URL="$door_url" TICKET_WORKER_HEALTH_ADDR=127.0.0.1:0 RUST_LOG=warn "${extra[@]}" "$build/ticket-worker" &
  worker_pid=$!
  api_url="http://127.0.0.1:$port"
  stack_wait_for "$port"
}

door() {
  local chromedriver build run
  chromedriver="$(scripts/browser.sh)"
  echo "## tickets and the door ($(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; $("$chromedriver" --version | cut -d' ' -f1-2))"
  for run in 1 2; do
    for build in ${DOOR_BEFORE_BIN:-} "$bin"; do
      echo "confirm path, build $build (run $run):"
      door_stack "$build" "confirm$run"
      TICKET_ADMIN_NICKNAME=bench TICKET_ADMIN_PASSWORD=bench-password-1234 \
        "$bin/ticket-bench" confirm --url "$api_url" --holds "${DOOR_HOLDS:-500}" --seats 4 --concurrency 8
      stop "$api_pid" "$worker_pid"
      DATABASE_URL="$door_url" "$bin/ticket-bench" drop-database
    done
  done
  door_stack "$bin" scan
  TICKET_CHROMEDRIVER="$chromedriver" TICKET_ADMIN_NICKNAME=bench TICKET_ADMIN_PASSWORD=bench-password-1234 \
    "$bin/ticket-bench" door --url "$api_url" --tickets "${DOOR_TICKETS:-1000}" --scanners 8
  stop "$api_pid" "$worker_pid"
  DATABASE_URL="$door_url" "$bin/ticket-bench" drop-database
}

# Money (issue 46), against localstripe on this host (its store in memory):
# the confirm path of free holds as the baseline, payments made per second,
# paid holds sold by signed webhooks per second with the webhook's p99, then
# a show of PAYMENTS_ORDERS (5,000) orders sold through Stripe and cancelled:
# the time until every refund is done at the provider, and duplicates.
payments() {
  local python ls_pid ls_port run
  python="$(scripts/localstripe.sh)"
  echo "## payments ($(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs)"
  coproc LOCALSTRIPE { "$python" scripts/localstripe-server.py; }
  ls_pid=$LOCALSTRIPE_PID
  read -r ls_port <&"${LOCALSTRIPE[0]}"
  local -a stripe_env=(TICKET_STRIPE_SECRET_KEY=sk_test_bench TICKET_STRIPE_PUBLISHABLE_KEY=pk_test_bench
    TICKET_STRIPE_WEBHOOK_SECRET=whsec_bench "TICKET_STRIPE_API_BASE=http://127.0.0.1:$ls_port/")
  export TICKET_ADMIN_NICKNAME=bench TICKET_ADMIN_PASSWORD=bench-password-1234
  # PAYMENTS_RUNS=0: only the cancelled show.
  for run in $(seq 1 "${PAYMENTS_RUNS:-2}"); do
    door_stack "$bin" "payments$run" "${stripe_env[@]}"
    echo "confirm path (free holds, the baseline), run $run:"
    "$bin/ticket-bench" confirm --url "$api_url" --holds "${PAYMENTS_HOLDS:-500}" --seats 2 --concurrency 8
    echo "payments, run $run:"
    TICKET_STRIPE_WEBHOOK_SECRET=whsec_bench "$bin/ticket-bench" payments --url "$api_url" \
      --stripe-port "$ls_port" --holds "${PAYMENTS_HOLDS:-500}" --seats 2 --concurrency 8
    stop "$api_pid" "$worker_pid"
    DATABASE_URL="$door_url" "$bin/ticket-bench" drop-database
  done
  door_stack "$bin" cancel "${stripe_env[@]}"
  TICKET_STRIPE_WEBHOOK_SECRET=whsec_bench "$bin/ticket-bench" cancel-show --url "$api_url" \
    --stripe-port "$ls_port" --orders "${PAYMENTS_ORDERS:-5000}"
  stop "$api_pid" "$worker_pid" "$ls_pid"
  DATABASE_URL="$door_url" "$bin/ticket-bench" drop-database
}

# Seating plans (issue 47): a 50,000-seat plan PUT, against as many seats
# made of rows × seatsPerRow in the same run.
seating_plan() {
  echo "## seating plans ($(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs)"
  export TICKET_ADMIN_NICKNAME=bench TICKET_ADMIN_PASSWORD=bench-password-1234
  door_stack "$bin" plans
  "$bin/ticket-bench" seating-plan --url "$api_url" --seats "${PLAN_SEATS:-50000}" --runs "${PLAN_RUNS:-3}"
  echo "the API's peak RSS: $(sed -n 's/^VmHWM: *//p' "/proc/$api_pid/status")"
  stop "$api_pid" "$worker_pid"
  DATABASE_URL="$door_url" "$bin/ticket-bench" drop-database
}

# Best available (issue 47): 100,000 requests of two seats over 50,000
# seats, exact two-seat orders (the baseline) against best-available
# requests of the same shape, alternating, three pairs, one worker.
best_available() {
  echo "## best available: 100,000 requests of 2 / 50,000 seats, exact orders against best available ($(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs)"
  for _ in 1 2 3; do
    RUST_LOG=warn "$bin/ticket-bench" drain --requests 100000 --seats 50000 --workers 1 --seats-per-order 2
    RUST_LOG=warn "$bin/ticket-bench" drain --requests 100000 --seats 50000 --workers 1 --seats-per-order 2 --best
  done
}

# Standing (issue 47): 100,000 requests over a standing area of 50,000
# places against exact orders of the same shape over 50,000 seats,
# alternating, three pairs of two-place requests, then one pair of one.
standing() {
  echo "## standing: 100,000 requests / a 50,000 area, exact orders against standing ($(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs)"
  for order in 2 2 2 1; do
    RUST_LOG=warn "$bin/ticket-bench" drain --requests 100000 --seats 50000 --workers 1 --seats-per-order "$order"
    RUST_LOG=warn "$bin/ticket-bench" drain --requests 100000 --seats 50000 --workers 1 --seats-per-order "$order" --standing
  done
}

# Mail (issue 31): the delivery rate of confirmations with their tickets to
# aiosmtpd on this host, one relay over 1 and 8 connections, then two relays.
mail() {
  local python
  python="$(scripts/smtp.sh)"
  echo "## mail to a local SMTP server ($(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs)"
  for args in "--connections 1" "--connections 8" "--relays 2 --connections 8"; do
    echo "mail $args:"
    # shellcheck disable=SC2086
    TICKET_SMTP_PYTHON="$python" RUST_LOG=warn "$bin/ticket-bench" mail --mails "${MAIL_COUNT:-2000}" $args
  done
}

# Sign-ups and logins (issue 45): each an Argon2 hash; the rate and the
# API's memory, for each build given (ACCOUNTS_BEFORE_BIN, then this one),
# alternated twice. wrk, 16 connections, 15 s each.
accounts() {
  ensure_wrk
  local build run rss
  echo "## sign-ups and logins ($(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs)"
  for run in 1 2; do
    for build in ${ACCOUNTS_BEFORE_BIN:-} "$bin"; do
      door_stack "$build" "accounts$run"
      echo "build $build (run $run): API RSS at start $(awk '/^VmRSS:/ { print int($2 / 1024) }' "/proc/$api_pid/status") MiB"
      TICKET_BENCH_MODE=signup TICKET_BENCH_RUN="$run" \
        wrk -t2 -c16 -d15s --latency -s bench/wrk/accounts.lua "$api_url" | grep -E "Requests/sec|99%|50%|Non-2xx"
      for i in $(seq 1 64); do
        curl -sf -o /dev/null -X POST "$api_url/api/users" -H 'content-type: application/json' \
          -d "{\"nickName\":\"acct$i\",\"password\":\"bench-password-1\"}"
      done
      TICKET_BENCH_MODE=login TICKET_BENCH_ACCOUNTS=64 \
        wrk -t2 -c16 -d15s --latency -s bench/wrk/accounts.lua "$api_url" | grep -E "Requests/sec|99%|50%|Non-2xx"
      rss="$(awk '/^VmRSS:|^VmHWM:/ { printf "%s %d MiB  ", $1, $2 / 1024 }' "/proc/$api_pid/status")"
      echo "API after: $rss"
      stop "$api_pid" "$worker_pid"
      DATABASE_URL="$door_url" "$bin/ticket-bench" drop-database
    done
  done
}

pow_page() {
  local url chromedriver
  chromedriver="$(scripts/browser.sh)"
  echo "## the proof of work solved by the page in headless Chromium ($("$chromedriver" --version | cut -d' ' -f1-2)), per level"
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue --users 1 --seats 1 --out "$work/pow-lines")"
  start_api "$url" TICKET_DEV_MODE=true TICKET_ADMIN_NICKNAME=bench TICKET_ADMIN_PASSWORD=bench-password-1234 \
    TICKET_USER_REQUESTS_PER_SEC=0 TICKET_ANONYMOUS_REQUESTS_PER_SEC=0 TICKET_MAX_OPEN_REQUESTS_PER_USER=100000
  TICKET_CHROMEDRIVER="$chromedriver" TICKET_ADMIN_NICKNAME=bench TICKET_ADMIN_PASSWORD=bench-password-1234 \
    "$bin/ticket-bench" pow-page --url "$api_url" --solves "${POW_SOLVES:-21}" --max-level "${POW_MAX_LEVEL:-12}"
  stop "$api_pid"
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
}

page() {
  local url chromedriver
  chromedriver="$(scripts/browser.sh)"
  echo "## the concert page in headless Chromium ($("$chromedriver" --version | cut -d' ' -f1-2)): weight, and time to a usable seat map"
  url="$(TICKET_AUTH_SECRET="$secret" "$bin/ticket-bench" prepare-enqueue --users 1 --seats 1 --out "$work/page-lines")"
  start_api "$url" TICKET_DEV_MODE=true TICKET_ADMIN_NICKNAME=bench TICKET_ADMIN_PASSWORD=bench-password-1234 \
    TICKET_USER_REQUESTS_PER_SEC=0 TICKET_ANONYMOUS_REQUESTS_PER_SEC=0
  local layout
  for layout in "1 100" "100 100"; do
    set -- $layout
    echo "### $1 rows x $2 seats ($(( $1 * $2 )) seats)"
    TICKET_CHROMEDRIVER="$chromedriver" TICKET_ADMIN_NICKNAME=bench TICKET_ADMIN_PASSWORD=bench-password-1234 \
      "$bin/ticket-bench" page --url "$api_url" --rows "$1" --seats-per-row "$2" --runs 10
  done
  # Issue 47: a venue's plan of 50,000 seats, drawn at its coordinates,
  # against the 10,000-seat grid above.
  echo "### a seating plan: 200 rows x 250 seats (50000 seats)"
  TICKET_CHROMEDRIVER="$chromedriver" TICKET_ADMIN_NICKNAME=bench TICKET_ADMIN_PASSWORD=bench-password-1234 \
    "$bin/ticket-bench" page --url "$api_url" --plan-rows 200 --seats-per-row 250 --runs 10
  stop "$api_pid"
  DATABASE_URL="$url" "$bin/ticket-bench" drop-database
}

# Issue 57: the storm of make test, long (50,000 operations unless
# STORM_OPERATIONS says), its seed, counts, violations and money mismatches
# printed; STORM_SEED replays a seed.
storm() {
  echo "## the storm ($(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs)"
  cargo build --locked -p ticket-worker >&2
  # Through env: an assignment that comes of an expansion is a word, not
  # an assignment, to the shell.
  env TICKET_LOCALSTRIPE_PYTHON="$(scripts/localstripe.sh)" \
    TICKET_STORM_OPERATIONS="${STORM_OPERATIONS:-50000}" ${STORM_SEED:+TICKET_STORM_SEED="$STORM_SEED"} \
    cargo test --locked -p ticket-api --test api -- storm --nocapture 2>&1 | tee .local/bench/storm.log |
    grep -E '^storm:|^test result|panicked|seed'
}

case "$what" in
  drain) drain ;;
  enqueue) enqueue ;;
  intake) intake ;;
  profile) enqueue_profile ;;
  latency) latency ;;
  cpu) cpu_per_request ;;
  steps) latency_steps ;;
  mixed) mixed ;;
  fairness) fairness ;;
  tracing) tracing_overhead ;;
  sampled) caller_sampled ;;
  retention) retention_cost ;;
  clean) enqueue_clean ;;
  detail) concert_detail ;;
  staff) staff_costs ;;
  checkout) checkout ;;
  open) ticket_open ;;
  open-polls) open_polls ;;
  accounts) accounts ;;
  million) million ;;
  fans-open) fans_open ;;
  many-concerts) many_concerts ;;
  open-streams) open_streams ;;
  open-availability) open_availability ;;
  page) page ;;
  pow-page) pow_page ;;
  door) door ;;
  payments) payments ;;
  seating-plan) seating_plan ;;
  best) best_available ;;
  standing) standing ;;
  mail) mail ;;
  storm) storm ;;
  all) drain; fairness; enqueue; mixed; latency; tracing_overhead ;;
  *) echo "usage: $0 [drain|fairness|enqueue|clean|detail|mixed|latency|steps|cpu|tracing|sampled|retention|checkout|intake|profile|open|open-polls|open-streams|open-availability|page|pow-page|door|mail|payments|seating-plan|best|standing|accounts|million|fans-open|many-concerts|storm|all]" >&2; exit 2 ;;
esac
