#!/usr/bin/env bash
# The whole test suite against a real database: DATABASE_URL when set,
# otherwise the project's private server (scripts/db.sh). Each integration
# test creates and drops a database of its own on that server.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DATABASE_URL="$(scripts/db.sh)"
export DATABASE_URL
cargo test --workspace --locked --no-fail-fast "$@"
