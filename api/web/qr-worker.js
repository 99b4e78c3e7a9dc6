// The door's QR reader where the browser has none of its own (iPhone
// Safari, Firefox, Chromium on Linux): ZXing's WebAssembly build behind
// the BarcodeDetector API (npm `barcode-detector`, scripts/vendor-qr.sh).
// A worker, so that decoding never stalls the page, and so that only it
// may compile WebAssembly (its own policy says so; the page's does not).
// Each message is a frame (ImageData); each answer the code read, or null.

import { BarcodeDetector, prepareZXingModule } from "./barcode-detector.js";

prepareZXingModule({
  overrides: {
    // Served beside this worker, never from a CDN.
    locateFile: (path, prefix) => (path.endsWith(".wasm") ? new URL("./zxing_reader.wasm", import.meta.url).href : prefix + path),
  },
  fireImmediately: true,
});

const detector = new BarcodeDetector({ formats: ["qr_code"] });

self.onmessage = async ({ data }) => {
  try {
    const found = await detector.detect(data);
    self.postMessage(found[0]?.rawValue ?? null);
  } catch {
    self.postMessage(null);
  }
};
