# Sourced (from the project root) by scripts/k6.sh, fuzz.sh and fault.sh: they
# each build the binaries, make throwaway databases, start an API and a worker
# on free ports, and must leave nothing behind when they exit. bench.sh takes
# its port helpers.

# Load and fuzzing come from one address with thousands of users, so the rate
# limits are off for them (the limits have tests of their own).
stack_limits_off=(TICKET_USER_REQUESTS_PER_SEC=0 TICKET_ANONYMOUS_REQUESTS_PER_SEC=0 TICKET_LOGINS_PER_MINUTE_PER_NICKNAME=0
  TICKET_LOGINS_PER_MINUTE_PER_CLIENT=0 TICKET_SIGNUPS_PER_MINUTE_PER_CLIENT=0)
# A deployment signs ticket codes: a seed made for this run.
stack_code_keys="$(head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
stack_pids=()
stack_databases=()

# Builds the binaries of PROFILE (debug or release) and sets bin.
stack_build() {
  local profile="${PROFILE:-debug}"
  cargo build --locked --bins $([ "$profile" = release ] && echo --release) >&2
  bin="target/$profile"
}

# stack_database SERVER_URL NAME: sets database_url to database NAME on that
# server; it is dropped on exit.
stack_database() {
  local server="${1%%\?*}"
  database_url="${server%/*}/$2"
  stack_databases+=("$database_url")
}

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# stack_free_port FROM: sets port to the first one from FROM that is free.
stack_free_port() {
  port="$1"
  while listening "$port"; do port=$((port + 1)); done
}

# stack_wait_for PORT: returns once something listens there (10 s at most).
stack_wait_for() {
  for _ in $(seq 1 100); do listening "$1" && return 0; sleep 0.1; done
  echo "nothing listens on port $1" >&2
  return 1
}

# stack_spawn COMMAND...: runs it in the background, to be stopped on exit;
# sets spawned_pid.
stack_spawn() {
  "$@" &
  spawned_pid=$!
  stack_pids+=("$spawned_pid")
}

# Stops what was spawned and drops the databases; the scripts' EXIT trap.
stack_stop() {
  local pid url
  for pid in "${stack_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${stack_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  for url in "${stack_databases[@]}"; do
    DATABASE_URL="$url" "$bin/ticket-bench" drop-database >/dev/null 2>&1 || true
  done
}

# chart_memory_limit_mib COMPONENT: the chart's resources.limits.memory of
# the api or worker section of charts/ticket/values.yaml, in MiB.
chart_memory_limit_mib() {
  awk -v section="$1:" '
    /^[a-z]/ { inside = ($1 == section) }
    inside && /limits:/ && match($0, /memory: *[0-9]+(Mi|Gi)/) {
      value = substr($0, RSTART, RLENGTH); sub(/memory: */, "", value)
      n = value + 0; if (value ~ /Gi/) n *= 1024; print n; exit
    }' charts/ticket/values.yaml
}

# stack_peak_memory LABEL PID COMPONENT: prints the process's peak RSS
# (VmHWM) beside 70 % of the chart's memory limit for COMPONENT (api or
# worker), appends the line to TICKET_MEMORY_LOG when set, and fails when
# the peak passes that share: a pod that peaks there on a test's load is
# one busy day away from being OOM-killed.
stack_peak_memory() {
  local label="$1" pid="$2" component="$3" peak_kib limit budget line
  peak_kib="$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)"
  if [ -z "$peak_kib" ]; then
    echo "memory: $label (pid $pid) is not running: no peak to read" >&2
    return 1
  fi
  limit="$(chart_memory_limit_mib "$component")"
  budget=$((limit * 70 / 100))
  line="memory: $label peak RSS $((peak_kib / 1024)) MiB (chart limit ${limit} Mi, 70 % = ${budget} MiB)"
  echo "$line" >&2
  [ -z "${TICKET_MEMORY_LOG:-}" ] || echo "$line" >>"$TICKET_MEMORY_LOG"
  if [ $((peak_kib / 1024)) -gt "$budget" ]; then
    echo "memory: $label passed 70 % of the chart's limit" >&2
    return 1
  fi
}
