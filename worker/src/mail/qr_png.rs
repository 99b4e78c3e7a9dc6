//! A ticket's QR code as a PNG for mail: mail readers show PNG inline where
//! many will not show SVG (the page's format). One bit a pixel, black on
//! white, a quiet zone of four modules; written here (signature, IHDR, one
//! zlib IDAT, IEND) rather than with an image crate for a few hundred bytes.

use std::io::Write as _;

use flate2::Crc;
use flate2::write::ZlibEncoder;
use qrcode::{Color, EcLevel, QrCode};

/// Pixels a module: a 130-character code (version 8, 49 modules) makes a
/// 456-pixel square, scanned easily from a phone held up to a gate.
const SCALE: usize = 8;
const QUIET_ZONE: usize = 4;

/// The PNG of `text`'s QR code (error correction level M, as the page's).
pub fn png(text: &str) -> Result<Vec<u8>, qrcode::types::QrError> {
    let symbol = QrCode::with_error_correction_level(text.as_bytes(), EcLevel::M)?;
    let modules = symbol.width();
    let colors = symbol.to_colors();
    let dark = |x: usize, y: usize| {
        let (x, y) = (x / SCALE, y / SCALE);
        x >= QUIET_ZONE
            && y >= QUIET_ZONE
            && x < QUIET_ZONE + modules
            && y < QUIET_ZONE + modules
            && colors[(y - QUIET_ZONE) * modules + (x - QUIET_ZONE)] == Color::Dark
    };
    let side = (modules + 2 * QUIET_ZONE) * SCALE;
    let row_bytes = side.div_ceil(8);
    let mut raw = Vec::with_capacity((row_bytes + 1) * side);
    for y in 0..side {
        raw.push(0); // filter: none
        for byte in 0..row_bytes {
            let mut bits = 0u8;
            for bit in 0..8 {
                let x = byte * 8 + bit;
                // Grayscale at one bit: 1 is white.
                if x >= side || !dark(x, y) {
                    bits |= 0x80 >> bit;
                }
            }
            raw.push(bits);
        }
    }
    let mut zlib = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = zlib.write_all(&raw);
    let idat = zlib.finish().unwrap_or_default();

    let side = u32::try_from(side).unwrap_or(u32::MAX);
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&side.to_be_bytes());
    ihdr.extend_from_slice(&side.to_be_bytes());
    // Bit depth 1, grayscale, deflate, no filter method, no interlace.
    ihdr.extend_from_slice(&[1, 0, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut png, b"IHDR", &ihdr);
    chunk(&mut png, b"IDAT", &idat);
    chunk(&mut png, b"IEND", &[]);
    Ok(png)
}

fn chunk(png: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    png.extend_from_slice(&u32::try_from(data.len()).unwrap_or(0).to_be_bytes());
    let mut crc = Crc::new();
    crc.update(kind);
    crc.update(data);
    png.extend_from_slice(kind);
    png.extend_from_slice(data);
    png.extend_from_slice(&crc.sum().to_be_bytes());
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_scanner_reads_back_the_code_from_the_image() {
        let code = "AQ".repeat(65);
        let image = super::png(&code).unwrap();
        assert_eq!(&image[..8], b"\x89PNG\r\n\x1a\n");
        assert!(image.len() < 4_000, "{} bytes", image.len());
        assert_eq!(ticket_core::testing::smtp::qr_text(&image), code);
    }
}
