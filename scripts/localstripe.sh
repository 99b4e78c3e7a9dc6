#!/usr/bin/env bash
# Makes sure localstripe (PyPI: a stateful fake of Stripe's API with signed
# webhooks and a fake Stripe.js) is installed into .local/venv for the
# payment tests, which start one each (scripts/localstripe-server.py);
# prints the interpreter's path. Everything else goes to stderr.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="$(scripts/venv.sh)"
if ! "$venv/bin/python" -c 'import localstripe' 2>/dev/null; then
  scripts/venv.sh 'localstripe==1.15.10' >/dev/null
fi
echo "$PWD/$venv/bin/python"
