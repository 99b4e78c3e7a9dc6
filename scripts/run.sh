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

# PAYMENTS=localstripe (`make run PAYMENTS=localstripe`): fans pay by card
# against localstripe, a fake of Stripe's API and Stripe.js on this host
# (installed into .local/venv), whose signed webhooks come back to the API.
# Its test cards: 4242424242424242 pays, 4000000000000002 is declined,
# 4000002500003155 asks for 3-D Secure. Without it, priced orders are
# paid at the box office and confirmed by an operator.
localstripe_pid=
case "${PAYMENTS:-}" in
  "") ;;
  localstripe)
    python="$(scripts/localstripe.sh)"
    coproc LOCALSTRIPE { "$python" scripts/localstripe-server.py; }
    localstripe_pid=$LOCALSTRIPE_PID
    read -r localstripe_port <&"${LOCALSTRIPE[0]}"
    export TICKET_STRIPE_SECRET_KEY=sk_test_local TICKET_STRIPE_PUBLISHABLE_KEY=pk_test_local
    export TICKET_STRIPE_WEBHOOK_SECRET=whsec_local
    export TICKET_STRIPE_API_BASE="http://127.0.0.1:$localstripe_port/"
    export TICKET_STRIPE_JS_URL="http://127.0.0.1:$localstripe_port/js.stripe.com/v3/"
    ;;
  *)
    echo "PAYMENTS=${PAYMENTS}: the one offered locally is PAYMENTS=localstripe" >&2
    exit 2
    ;;
esac

cargo build --workspace --locked --bins
bin=target/debug
"$bin/ticket-api" migrate

"$bin/ticket-worker" &
worker=$!
command -v curl >/dev/null 2>&1 || scripts/debian.sh curl
# Ctrl-C reaches the API and the worker directly (same process group) and both
# shut down gracefully; the script only waits for them. If the API stops for
# any other reason, the worker goes with it.
trap 'kill "$worker" $localstripe_pid 2>/dev/null || true; wait "$worker" 2>/dev/null || true' EXIT
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
if [ -n "$localstripe_pid" ]; then
  cat <<MSG
  payments      card payments against localstripe on http://127.0.0.1:$localstripe_port/
                (4242 4242 4242 4242 pays, 4000 0000 0000 0002 is declined,
                4000 0025 0000 3155 asks for 3-D Secure; any future date and CVC)
MSG
else
  echo "  payments      at the box office (card payments: make run PAYMENTS=localstripe)"
fi
echo


"$bin/ticket-api" &
api=$!
trap 'kill "$worker" "$api" $localstripe_pid 2>/dev/null || true; wait "$worker" "$api" 2>/dev/null || true' EXIT
# An example concert seated from a venue's plan, once the API answers.
for _ in $(seq 1 100); do
  curl -fsS "http://$TICKET_API_ADDR/readyz" >/dev/null 2>&1 && break
  sleep 0.2
done
# localstripe's payment events go to the API's webhook, signed with its secret.
if [ -n "$localstripe_pid" ]; then
  curl -fsS -X POST "http://127.0.0.1:$localstripe_port/_config/webhooks/ticket" \
    --data-urlencode "url=http://$TICKET_API_ADDR/api/payments/stripe/webhook" \
    --data-urlencode "secret=$TICKET_STRIPE_WEBHOOK_SECRET" >/dev/null ||
    echo "localstripe's webhooks could not be pointed at the API: payments will not sell holds" >&2
fi
scripts/example-concert.sh "http://$TICKET_API_ADDR" "$TICKET_ADMIN_NICKNAME" "$TICKET_ADMIN_PASSWORD" ||
  echo "the example concert could not be made (the box office runs without it)" >&2
wait "$api"
