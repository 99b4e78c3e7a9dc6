#!/usr/bin/env bash
# Brings axe-core (the accessibility checker the page's tests run in
# Chromium) at the version pinned below, checked against npm's integrity
# hash, into .local/axe/; prints the script's path. Used by the tests only:
# the page never serves it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

VERSION=4.14.1
INTEGRITY=sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==

out=".local/axe/axe-$VERSION.min.js"
if [ ! -s "$out" ]; then
  command -v curl >/dev/null 2>&1 || scripts/debian.sh curl >&2
  command -v openssl >/dev/null 2>&1 || scripts/debian.sh openssl >&2
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  curl -fsSL "https://registry.npmjs.org/axe-core/-/axe-core-$VERSION.tgz" -o "$work/axe.tgz"
  actual="sha512-$(openssl dgst -sha512 -binary "$work/axe.tgz" | base64 -w0)"
  if [ "$actual" != "$INTEGRITY" ]; then
    echo "axe-core-$VERSION.tgz is not the package npm published ($actual)" >&2
    exit 1
  fi
  tar -xzf "$work/axe.tgz" -C "$work"
  mkdir -p .local/axe
  cp "$work/package/axe.min.js" "$out"
  echo "axe-core $VERSION into $out" >&2
fi
echo "$PWD/$out"
