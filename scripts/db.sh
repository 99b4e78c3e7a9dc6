#!/usr/bin/env bash
# Makes a MySQL-compatible database available and prints its URL on stdout.
#
#   scripts/db.sh          start (or reuse) the database, print DATABASE_URL
#   scripts/db.sh stop     stop the private server, if this project started one
#
# If DATABASE_URL is already set it is used as is. Otherwise a private MariaDB
# (or MySQL) server runs from .local/db/ in the project, on a free loopback port,
# so nothing on the machine is touched and nothing needs a manual step. The
# Debian package is installed when no server binary exists. Safe to run twice,
# and concurrently: a lock serialises starts. Everything but the URL goes to stderr.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# TICKET_DB_DIR: another private server (the fault tests stop and start one).
dir="${TICKET_DB_DIR:-$root/.local/db}"
data="$dir/data"
sock="$dir/mysqld.sock"
pidfile="$dir/mysqld.pid"
portfile="$dir/port"
log="$dir/error.log"
db_user=ticket
db_pass=ticket
db_name=ticket

say() { echo "db: $*" >&2; }

find_bin() {
  local name
  for name in "$@"; do
    if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
    for d in /usr/sbin /usr/local/sbin /usr/bin /usr/local/bin; do
      if [ -x "$d/$name" ]; then echo "$d/$name"; return 0; fi
    done
  done
  return 1
}

server_pid() {
  [ -f "$pidfile" ] || return 1
  local pid
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

if [ "${1:-}" = "stop" ]; then
  if pid="$(server_pid)"; then
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    say "stopped private server (pid $pid)"
  else
    say "no private server running"
  fi
  exit 0
fi

if [ -n "${DATABASE_URL:-}" ]; then
  echo "$DATABASE_URL"
  exit 0
fi

install_server() {
  say "no MariaDB/MySQL server binary found; installing Debian's mariadb-server"
  # The package's own service is irrelevant here; we run a private instance.
  "$root/scripts/debian.sh" mariadb-server mariadb-client
}

server="$(find_bin mariadbd mysqld || true)"
if [ -z "$server" ]; then
  install_server
  server="$(find_bin mariadbd mysqld)"
fi
client="$(find_bin mariadb mysql)"

mkdir -p "$dir"
exec 9>"$dir/lock"
flock 9

run_user="$(id -un)"

# Ubuntu's mysql-server ships an AppArmor profile that confines mysqld to
# /var/lib/mysql, so a private data directory is refused with errno 13.
explain_denial() {
  if grep -qiE "errno:? ?13|Errcode: 13|Permission denied" "$1" 2>/dev/null; then
    say "permission denied: an AppArmor profile may confine $server to its own paths;"
    say "unload it with: sudo apparmor_parser -R /etc/apparmor.d/usr.sbin.$(basename "$server")"
  fi
}

sql() { "$client" --no-defaults --protocol=socket --socket="$sock" -uroot "$@"; }

if ! server_pid >/dev/null; then
  if [ ! -d "$data/mysql" ]; then
    say "initialising a private data directory in $data"
    rm -rf "$data"
    mkdir -p "$data"
    if installer="$(find_bin mariadb-install-db mysql_install_db)" && "$server" --version 2>/dev/null | grep -qi mariadb; then
      "$installer" --no-defaults --datadir="$data" --user="$run_user" \
        --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1 \
        || { cat "$dir/install.log" >&2; explain_denial "$dir/install.log"; exit 1; }
    else
      "$server" --no-defaults --initialize-insecure --datadir="$data" --user="$run_user" \
        >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; explain_denial "$dir/install.log"; exit 1; }
    fi
  fi

  port="$(cat "$portfile" 2>/dev/null || true)"
  port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
  if [ -z "$port" ] || port_busy "$port"; then
    port=3310
    while port_busy "$port"; do port=$((port + 1)); done
    echo "$port" >"$portfile"
  fi

  say "starting private server on 127.0.0.1:$port (data in $data)"
  # Durability stays at the defaults (flush at every commit): benchmarks run here too.
  setsid "$server" --no-defaults --datadir="$data" --socket="$sock" --pid-file="$pidfile" \
    --port="$port" --bind-address=127.0.0.1 --log-error="$log" --user="$run_user" \
    --skip-name-resolve --max-connections=2000 --innodb-buffer-pool-size=1G \
    --innodb-log-file-size=512M --character-set-server=utf8mb4 \
    --collation-server=utf8mb4_unicode_ci </dev/null >/dev/null 2>&1 9>&- &

  for _ in $(seq 1 300); do
    if sql -e "SELECT 1" >/dev/null 2>&1; then break; fi
    sleep 0.1
  done
  if ! sql -e "SELECT 1" >/dev/null 2>&1; then
    say "server did not come up; last log lines:"
    tail -n 30 "$log" >&2 || true
    explain_denial "$log"
    exit 1
  fi
fi

port="$(cat "$portfile")"
# The application user may create databases: the test harness makes one per test.
sql <<SQL
CREATE USER IF NOT EXISTS '$db_user'@'127.0.0.1' IDENTIFIED BY '$db_pass';
CREATE USER IF NOT EXISTS '$db_user'@'localhost' IDENTIFIED BY '$db_pass';
GRANT ALL PRIVILEGES ON *.* TO '$db_user'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO '$db_user'@'localhost';
CREATE DATABASE IF NOT EXISTS \`$db_name\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
SQL

url="mysql://$db_user:$db_pass@127.0.0.1:$port/$db_name"
say "using $url"
echo "$url"
