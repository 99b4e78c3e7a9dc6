#!/usr/bin/env bash
# The whole test suite: the Rust workspace against a real database
# (DATABASE_URL when set, otherwise the project's private server from
# scripts/db.sh; each integration test creates and drops a database of its
# own there), then the Helm chart (scripts/chart-test.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DATABASE_URL="$(scripts/db.sh)"
export DATABASE_URL
status=0
cargo test --workspace --locked --no-fail-fast "$@" || status=$?
# The Helm chart, rendered and validated by real Helm and Kubernetes schemas.
scripts/chart-test.sh || status=$?
exit "$status"
