#!/usr/bin/env bash
# Brings ALTCHA's widget (the npm package `altcha`, at the version pinned
# below, checked against npm's integrity hash) into api/web/vendor/altcha/,
# from where the binary serves it: its strict-CSP build ("external": no
# inline styles or workers), its stylesheet, and its SHA worker. The files
# are committed, so that building needs neither npm nor the network; run
# this only to change the version (then commit what it wrote).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

VERSION=3.2.2
INTEGRITY=sha512-yNITQaRSkRe0u/hMxdzoXFFqxqn9iDt1rJ0reREU3D3uDD3w1oFz6v5C2PMww2XnGThtYUwe8MW+PxsiBglNqw==

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "altcha@$VERSION" >/dev/null)
tarball="$work/altcha-$VERSION.tgz"
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$actual" != "$INTEGRITY" ]; then
  echo "altcha-$VERSION.tgz is not the package npm published ($actual)" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$work"
out=api/web/vendor/altcha
mkdir -p "$out"
cp "$work/package/dist/external/altcha.min.js" "$out/altcha.js"
cp "$work/package/dist/external/altcha.css" "$out/altcha.css"
cp "$work/package/dist/workers/sha.js" "$out/sha-worker.js"
cp "$work/package/LICENSE.txt" "$out/LICENSE.txt"
echo "altcha $VERSION ($INTEGRITY), from npm by scripts/vendor-altcha.sh" > "$out/VERSION"
echo "wrote $out from altcha $VERSION" >&2
