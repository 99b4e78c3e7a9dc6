#!/usr/bin/env bash
# Brings a QR decoder for the door's camera into api/web/vendor/qr/: the
# npm package `barcode-detector` (a BarcodeDetector for browsers without
# one: iPhone Safari, Firefox, Chromium on Linux) and the ZXing WebAssembly
# build it was made with (`zxing-wasm`, the version its bundle names), both
# at the versions pinned below and checked against npm's integrity hashes,
# and the wasm against the SHA-256 the bundle carries. The files are
# committed, so that building needs neither npm nor the network; run this
# only to change the versions (then commit what it wrote).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DETECTOR=3.2.2
DETECTOR_INTEGRITY=sha512-/4QOrrNrCRmDSBWiiP4aC72dnkuXUEdcFRidHgbPRXUpy82XcCMvJssI6fEs6JT42LS7DvBVZO70qasJbYKyrA==
ZXING=3.1.3
ZXING_INTEGRITY=sha512-3lC9BJk4fR5ZJxcGjb0hVnDFOW7KpLXHIebiBmVd4FDRQZVeObztoTKxRUPxlWwSgxrMRONK0u50hBD1aTYEKg==

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# npm's package `name@version` unpacked in $work/name, if it is the one npm published.
fetch() {
  local name=$1 version=$2 integrity=$3
  (cd "$work" && npm pack --silent "$name@$version" >/dev/null)
  local tarball="$work/$name-$version.tgz"
  local actual
  actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
  if [ "$actual" != "$integrity" ]; then
    echo "$name-$version.tgz is not the package npm published ($actual)" >&2
    exit 1
  fi
  mkdir -p "$work/$name"
  tar -xzf "$tarball" -C "$work/$name" --strip-components=1
}

fetch barcode-detector "$DETECTOR" "$DETECTOR_INTEGRITY"
fetch zxing-wasm "$ZXING" "$ZXING_INTEGRITY"
bundle="$work/barcode-detector/dist/es/zxing-exported.js"
if ! grep -q "zxing-wasm@$ZXING/" "$bundle"; then
  echo "barcode-detector $DETECTOR was not built with zxing-wasm $ZXING" >&2
  exit 1
fi
wasm="$work/zxing-wasm/dist/reader/zxing_reader.wasm"
sha="$(sha256sum "$wasm" | cut -d' ' -f1)"
if ! grep -q "$sha" "$bundle"; then
  echo "zxing_reader.wasm ($sha) is not the one barcode-detector $DETECTOR expects" >&2
  exit 1
fi
out=api/web/vendor/qr
mkdir -p "$out"
cp "$work/barcode-detector/dist/es/ponyfill.js" "$out/barcode-detector.js"
cp "$bundle" "$out/zxing-exported.js"
cp "$wasm" "$out/zxing_reader.wasm"
cp "$work/barcode-detector/LICENSE" "$out/LICENSE-barcode-detector.txt"
cp "$work/zxing-wasm/LICENSE" "$out/LICENSE-zxing-wasm.txt"
{
  echo "barcode-detector $DETECTOR ($DETECTOR_INTEGRITY)"
  echo "zxing-wasm $ZXING ($ZXING_INTEGRITY), zxing_reader.wasm sha256 $sha"
  echo "from npm by scripts/vendor-qr.sh"
} > "$out/VERSION"
echo "wrote $out from barcode-detector $DETECTOR and zxing-wasm $ZXING" >&2
