#!/usr/bin/env bash
# Local stack: database, migrations, API and worker. The API listens on
# TICKET_API_ADDR (default 127.0.0.1:8080); Ctrl-C stops both processes.
# A dev admin and a token-signing secret are generated once and kept in
# .local/dev/ (ignored by git), so tokens survive restarts.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DATABASE_URL="$(scripts/db.sh)"
export DATABASE_URL

dev=.local/dev
mkdir -p "$dev"
random_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }
[ -s "$dev/auth-secret" ] || random_hex 32 >"$dev/auth-secret"
[ -s "$dev/admin-password" ] || random_hex 12 >"$dev/admin-password"
# The Ed25519 seed ticket codes are signed with (base64url, 32 bytes).
[ -s "$dev/ticket-code-keys" ] || head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n' >"$dev/ticket-code-keys"

export TICKET_AUTH_SECRET="${TICKET_AUTH_SECRET:-$(cat "$dev/auth-secret")}"
export TICKET_DEV_MODE=true
[ -n "${TICKET_CODE_KEYS:-}" ] || export TICKET_CODE_KEYS_FILE="${TICKET_CODE_KEYS_FILE:-$PWD/$dev/ticket-code-keys}"
export TICKET_ADMIN_NICKNAME="${TICKET_ADMIN_NICKNAME:-admin}"
export TICKET_ADMIN_PASSWORD="${TICKET_ADMIN_PASSWORD:-$(cat "$dev/admin-password")}"
export TICKET_API_ADDR="${TICKET_API_ADDR:-127.0.0.1:8080}"

cargo build --workspace --locked --bins
bin=target/debug
"$bin/ticket-api" migrate

"$bin/ticket-worker" &
worker=$!
command -v curl >/dev/null 2>&1 || scripts/debian.sh curl
# Ctrl-C reaches the API and the worker directly (same process group) and both
# shut down gracefully; the script only waits for them. If the API stops for
# any other reason, the worker goes with it.
trap 'kill "$worker" 2>/dev/null || true; wait "$worker" 2>/dev/null || true' EXIT
trap ':' INT TERM

cat <<MSG

  box office    http://$TICKET_API_ADDR/   (log in as the dev admin to create a concert)
  ticket API    http://$TICKET_API_ADDR/api   (OpenAPI: http://$TICKET_API_ADDR/api/openapi.json)
  dev admin     nickname: $TICKET_ADMIN_NICKNAME   password: $TICKET_ADMIN_PASSWORD
  log in with   curl -s -X POST http://$TICKET_API_ADDR/api/auth/login \\
                  -H 'content-type: application/json' \\
                  -d '{"nickName":"$TICKET_ADMIN_NICKNAME","password":"$TICKET_ADMIN_PASSWORD"}'
  database      $DATABASE_URL

MSG

"$bin/ticket-api" &
api=$!
trap 'kill "$worker" "$api" 2>/dev/null || true; wait "$worker" "$api" 2>/dev/null || true' EXIT
# An example concert seated from a venue's plan, once the API answers.
for _ in $(seq 1 100); do
  curl -fsS "http://$TICKET_API_ADDR/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
scripts/example-concert.sh "http://$TICKET_API_ADDR" "$TICKET_ADMIN_NICKNAME" "$TICKET_ADMIN_PASSWORD" ||
  echo "the example concert could not be made (the box office runs without it)" >&2
wait "$api"
