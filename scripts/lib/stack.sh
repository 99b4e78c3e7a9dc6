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
