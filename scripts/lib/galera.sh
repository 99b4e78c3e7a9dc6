# Sourced (from the project root) by scripts/fault.sh: a three-node MariaDB
# Galera cluster on loopback behind HAProxy in single-writer mode, the layout
# mariadb-operator deploys with MaxScale (one node takes every write, the
# others stand by in sync; when the writer is lost a synced one takes over
# and keeps the role when the old one comes back). Everything lives under
# .local/galera and is stopped on exit by galera_stop.
#
#   galera_start [MODE]     bootstrap node 1, join 2 and 3 (mariabackup), start
#                           HAProxy: single-writer (the default) or every-node
#                           (round robin: writes on all three); sets
#                           galera_url (through HAProxy) and
#                           galera_node_url[1..3] (each node directly)
#   galera_kill N           SIGKILL node N
#   galera_restart N        start node N again after a crash (recovers its
#                           position, rejoins by IST), returns once it is synced
#   galera_writer           the node HAProxy sends writes to now (1-3)
#   galera_local_commits N  transactions node N committed for its own clients
#   galera_state N          the node's wsrep_local_state_comment (Synced, …)
#   galera_cluster_size N   the cluster's size as node N sees it
#   galera_verify DB FILE   after a run: every node Synced in a cluster of 3,
#                           every outbox event of DB among the ids in FILE
#                           (what the webhook receiver got), the longest
#                           pause between two decisions, the conflicts
#   galera_stop

galera_root="$PWD/.local/galera"
galera_provider=""
galera_server=""
galera_client=""
galera_pids=()
galera_proxy_pid=""
declare -a galera_port galera_gcomm galera_ist galera_sst galera_node_url

galera_find() {
  local name dir
  for name in "$@"; do
    for dir in /usr/sbin /usr/bin /usr/local/sbin /usr/local/bin; do
      [ -x "$dir/$name" ] && { echo "$dir/$name"; return 0; }
    done
  done
  return 1
}

# Installs what is missing: the MariaDB server (db.sh's), Galera 4,
# mariabackup and socat for a joining node's state transfer, HAProxy.
galera_install() {
  local missing=()
  galera_find mariadbd >/dev/null || missing+=(mariadb-server mariadb-client)
  [ -e /usr/lib/galera/libgalera_smm.so ] || [ -e /usr/lib/libgalera_smm.so ] || missing+=(galera-4)
  command -v mariabackup >/dev/null 2>&1 || missing+=(mariadb-backup)
  command -v socat >/dev/null 2>&1 || missing+=(socat)
  # The SST scripts find listening sockets with ss (or lsof); pgrep stops leftovers.
  command -v ss >/dev/null 2>&1 || command -v lsof >/dev/null 2>&1 || missing+=(iproute2)
  command -v pgrep >/dev/null 2>&1 || missing+=(procps)
  galera_find haproxy >/dev/null || missing+=(haproxy)
  [ "${#missing[@]}" = 0 ] || scripts/debian.sh "${missing[@]}"
  galera_server="$(galera_find mariadbd)"
  galera_client="$(galera_find mariadb)"
  galera_provider=/usr/lib/galera/libgalera_smm.so
  [ -e "$galera_provider" ] || galera_provider=/usr/lib/libgalera_smm.so
}

galera_sql() {
  local node="$1"
  shift
  "$galera_client" --no-defaults --protocol=socket --socket="$galera_root/n$node/mysqld.sock" -uroot -N -B "$@"
}

galera_status() { galera_sql "$1" -e "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null | awk '{print $2}' || true; }
galera_state() { galera_status "$1" wsrep_local_state_comment; }
galera_cluster_size() { galera_status "$1" wsrep_cluster_size; }
galera_local_commits() { galera_status "$1" wsrep_local_commits; }

# galera_free_port FROM: the first port from FROM nothing listens on and no
# other node of this cluster took.
galera_free_port() {
  local p="$1" taken=" ${galera_port[*]} ${galera_gcomm[*]} ${galera_ist[*]} ${galera_sst[*]} "
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || [[ "$taken" == *" $p "* ]]; do p=$((p + 1)); done
  echo "$p"
}

galera_write_config() {
  local n="$1" dir="$galera_root/n$1" members=""
  local m
  for m in 1 2 3; do members+="${members:+,}127.0.0.1:${galera_gcomm[$m]}"; done
  cat >"$dir/my.cnf" <<CNF
[mysqld]
datadir=$dir/data
socket=$dir/mysqld.sock
pid-file=$dir/mysqld.pid
log-error=$dir/error.log
port=${galera_port[$n]}
bind-address=127.0.0.1
user=$(id -un)
skip-name-resolve
max-connections=1000
innodb-buffer-pool-size=256M
character-set-server=utf8mb4
collation-server=utf8mb4_unicode_ci
# Galera replicates row images and needs interleaved auto-increment locks.
binlog-format=ROW
default-storage-engine=InnoDB
innodb-autoinc-lock-mode=2
wsrep-on=ON
wsrep-provider=$galera_provider
wsrep-cluster-name=ticket-fault
wsrep-cluster-address=gcomm://$members
wsrep-node-name=n$n
wsrep-node-address=127.0.0.1:${galera_gcomm[$n]}
# TICKET_GALERA_PROVIDER_OPTIONS: more of them, e.g. evs.suspect_timeout=PT2S
# to measure a shorter failure detection (docs/scaling.md).
wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:${galera_gcomm[$n]};ist.recv_addr=127.0.0.1:${galera_ist[$n]};gcache.size=512M${TICKET_GALERA_PROVIDER_OPTIONS:+;$TICKET_GALERA_PROVIDER_OPTIONS}
wsrep-sst-method=mariabackup
wsrep-sst-auth=sst:sst
wsrep-sst-receive-address=127.0.0.1:${galera_sst[$n]}
# What mariadb-operator sets: reads wait for the node to have applied every
# write certified before them, so a standby that becomes the writer never
# answers from behind the old one.
wsrep-sync-wait=1
CNF
}

# galera_spawn N [ARGS]: starts node N's server in the background.
galera_spawn() {
  local n="$1"
  shift
  setsid "$galera_server" --defaults-file="$galera_root/n$n/my.cnf" "$@" </dev/null >>"$galera_root/n$n/server.out" 2>&1 &
  galera_pids[$n]=$!
}

# galera_wait_synced N [SECONDS]: returns once node N is Synced.
galera_wait_synced() {
  local n="$1" tries=$((${2:-120} * 10))
  for _ in $(seq 1 "$tries"); do
    [ "$(galera_state "$n")" = Synced ] && return 0
    kill -0 "${galera_pids[$n]}" 2>/dev/null || break
    sleep 0.1
  done
  echo "galera: node $n did not become Synced; last log lines:" >&2
  tail -n 30 "$galera_root/n$n/error.log" >&2 || true
  return 1
}

galera_start() {
  local mode="${1:-single-writer}"
  galera_install
  galera_stop_leftovers
  rm -rf "$galera_root"
  local n next=3340
  for n in 1 2 3; do
    galera_port[$n]="$(galera_free_port "$next")"
    galera_gcomm[$n]="$(galera_free_port $((galera_port[n] + 1)))"
    galera_ist[$n]="$(galera_free_port $((galera_gcomm[n] + 1)))"
    galera_sst[$n]="$(galera_free_port $((galera_ist[n] + 1)))"
    next=$((galera_sst[n] + 1))
  done
  for n in 1 2 3; do
    mkdir -p "$galera_root/n$n/data"
    galera_write_config "$n"
    galera_node_url[$n]="mysql://ticket:ticket@127.0.0.1:${galera_port[$n]}/ticket"
  done
  # Node 1 founds the cluster with the users and the database; 2 and 3
  # join and copy it (mariabackup, as mariadb-operator's nodes do).
  "$(galera_find mariadb-install-db)" --defaults-file="$galera_root/n1/my.cnf" --auth-root-authentication-method=normal \
    --skip-test-db >"$galera_root/n1/install.log" 2>&1 || { cat "$galera_root/n1/install.log" >&2; return 1; }
  galera_spawn 1 --wsrep-new-cluster
  galera_wait_synced 1
  galera_sql 1 <<SQL
CREATE USER 'ticket'@'127.0.0.1' IDENTIFIED BY 'ticket';
CREATE USER 'ticket'@'localhost' IDENTIFIED BY 'ticket';
GRANT ALL PRIVILEGES ON *.* TO 'ticket'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'ticket'@'localhost';
CREATE USER 'sst'@'localhost' IDENTIFIED BY 'sst';
GRANT RELOAD, PROCESS, LOCK TABLES, BINLOG MONITOR, REPLICA MONITOR ON *.* TO 'sst'@'localhost';
CREATE DATABASE ticket CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
SQL
  for n in 2 3; do
    galera_spawn "$n"
    galera_wait_synced "$n"
  done
  galera_start_proxy "$mode"
  echo "galera: 3 nodes synced (ports ${galera_port[*]}), HAProxy ($mode) on 127.0.0.1:$galera_proxy_port" >&2
}

# Writes go to one node at a time: node 1 is the only active server, the
# others are backups (HAProxy uses the first one up, and only when no
# active one is), so every connection lands on the same node; a one-entry
# stick table then keeps the role where it went, so a node that comes back
# does not take writes away mid-sale. A node counts as up only when it is
# Synced (an external check asks it), not merely when it accepts TCP.
galera_start_proxy() {
  local dir="$galera_root/proxy" routing standby=""
  if [ "$1" = every-node ]; then
    routing="  balance roundrobin"
  else
    routing=$'  stick-table type integer size 1 expire 1d\n  stick on int(1)'
    standby=" backup"
  fi
  mkdir -p "$dir"
  galera_proxy_port="$(galera_free_port 3350)"
  cat >"$dir/check.sh" <<CHECK
#!/usr/bin/env bash
# HAProxy's external check: \$3 is the node's address, \$4 its port.
state="\$("$galera_client" --no-defaults -h"\$3" -P"\$4" -uticket -pticket -N -B --connect-timeout=1 \\
  -e "SHOW GLOBAL STATUS LIKE 'wsrep_local_state'" 2>/dev/null | awk '{print \$2}')"
[ "\$state" = 4 ]
CHECK
  chmod +x "$dir/check.sh"
  {
    cat <<CFG
global
  insecure-fork-wanted
  external-check
  maxconn 4000
  log stdout format raw local0 info
defaults
  mode tcp
  log global
  timeout connect 2s
  timeout client 1h
  timeout server 1h
frontend writer
  bind 127.0.0.1:$galera_proxy_port
  default_backend galera
backend galera
  option external-check
  external-check path "/usr/bin:/bin"
  external-check command $dir/check.sh
$routing
  option redispatch
  retries 3
  default-server inter 500ms fall 2 rise 2 on-marked-down shutdown-sessions
CFG
    local n
    echo "  server n1 127.0.0.1:${galera_port[1]} check"
    for n in 2 3; do echo "  server n$n 127.0.0.1:${galera_port[$n]} check$standby"; done
  } >"$dir/haproxy.cfg"
  "$(galera_find haproxy)" -f "$dir/haproxy.cfg" -db >>"$dir/haproxy.log" 2>&1 &
  galera_proxy_pid=$!
  galera_url="mysql://ticket:ticket@127.0.0.1:$galera_proxy_port/ticket"
  # Up once HAProxy has seen a node healthy and routes a query.
  local _
  for _ in $(seq 1 100); do
    [ -n "$(galera_writer)" ] && return 0
    sleep 0.1
  done
  echo "galera: HAProxy routes no query; its log:" >&2
  tail -n 20 "$dir/haproxy.log" >&2
  return 1
}

# The node a new connection through HAProxy lands on.
galera_writer() {
  "$galera_client" --no-defaults -h127.0.0.1 -P"$galera_proxy_port" -uticket -pticket -N -B --connect-timeout=2 \
    -e "SELECT @@wsrep_node_name" 2>/dev/null | sed -n 's/^n//p' || true
}

galera_kill() {
  kill -KILL "${galera_pids[$1]}"
  wait "${galera_pids[$1]}" 2>/dev/null || true
}

# A crashed node's grastate.dat has no position: recover it from InnoDB
# first (what galera_recovery does for systemd), then start from it so that
# the node rejoins by incremental transfer from the others' gcache.
galera_restart() {
  local n="$1" position
  "$galera_server" --defaults-file="$galera_root/n$n/my.cnf" --wsrep-recover --log-error="$galera_root/n$n/recover.log" \
    >/dev/null 2>&1 || true
  position="$(sed -n 's/.*WSREP: Recovered position: \(.*\)/\1/p' "$galera_root/n$n/recover.log" | tail -n1)"
  galera_spawn "$n" ${position:+--wsrep-start-position="$position"}
  galera_wait_synced "$n"
}

galera_verify() {
  local db="$1" received="$2" n node="" failed=0 synced=yes cert=0 aborts=0 pending _
  for n in 1 2 3; do
    if [ "$(galera_state "$n")" != Synced ] || [ "$(galera_cluster_size "$n")" != 3 ]; then
      echo "galera: node $n is $(galera_state "$n") in a cluster of $(galera_cluster_size "$n")" >&2
      failed=1 synced=no
    else
      node="$n"
    fi
    cert=$((cert + $(galera_status "$n" wsrep_local_cert_failures || echo 0)))
    aborts=$((aborts + $(galera_status "$n" wsrep_local_bf_aborts || echo 0)))
  done
  [ -n "$node" ] || return 1
  # Events are delivered after the decisions: wait for the relay to finish.
  for _ in $(seq 1 600); do
    pending="$(galera_sql "$node" "$db" -e "SELECT COUNT(*) FROM outbox WHERE published_at IS NULL")"
    [ "$pending" = 0 ] && break
    sleep 0.1
  done
  local events delivered missing duplicates pause conflicts
  galera_sql "$node" "$db" -e "SELECT id FROM outbox" | sort -u >"$received.expected"
  sort -u "$received" | grep -v '^$' >"$received.unique" || true
  events="$(wc -l <"$received.expected")"
  delivered="$(grep -c . "$received" || true)"
  missing="$(comm -23 "$received.expected" "$received.unique" | wc -l)"
  duplicates=$((delivered - $(wc -l <"$received.unique")))
  [ "$missing" = 0 ] && [ "$pending" = 0 ] || failed=1
  pause="$(galera_sql "$node" "$db" -e "SELECT ROUND(COALESCE(MAX(gap), 0) / 1000000, 2) FROM (SELECT TIMESTAMPDIFF(MICROSECOND, \
    LAG(decided_at) OVER (ORDER BY decided_at), decided_at) AS gap FROM reservation_queue WHERE decided_at IS NOT NULL) g")"
  conflicts=$((cert + aborts))
  echo "cluster: 3 nodes Synced=$synced; events=$events undelivered=$pending missing=$missing (delivered again: $duplicates); longest pause between decisions ${pause} s; conflicts=$conflicts (certification failures $cert, brute-force aborts $aborts)"
  return "$failed"
}

# A throwaway cluster: each server gets 20 s to shut down, then SIGKILL.
galera_stop() {
  local n _
  [ -n "$galera_proxy_pid" ] && kill "$galera_proxy_pid" 2>/dev/null
  for n in 3 2 1; do
    [ -n "${galera_pids[$n]:-}" ] && kill "${galera_pids[$n]}" 2>/dev/null
  done
  for _ in $(seq 1 200); do
    pgrep -f "$galera_root/n./my.cnf" >/dev/null || break
    sleep 0.1
  done
  galera_stop_leftovers
  return 0
}

# Servers an earlier run left behind (killed before its trap ran).
galera_stop_leftovers() {
  pkill -KILL -f "$galera_root/n./my.cnf" 2>/dev/null || true
  pkill -KILL -f "$galera_root/proxy/haproxy.cfg" 2>/dev/null || true
}
