//! The door reads a ticket through the camera (issue 58): Chromium's fake
//! camera films a ticket's QR code, and the door page, with no
//! BarcodeDetector of its own (as on iPhone Safari), reads it with the
//! vendored ZXing decoder in its worker and admits the ticket.

use std::path::{Path, PathBuf};

use serde_json::json;
use ticket_core::testing::browser::{Chromedriver, screenshot_dir};

use super::helpers::spawn_app;
use super::tickets_of;

/// The frame's size; the symbol's modules are drawn this many pixels wide.
const WIDTH: usize = 640;
const HEIGHT: usize = 480;
const MODULE_PX: usize = 7;

/// A short Y4M video (4:2:0, a few identical frames, looped by Chromium)
/// of `code` as the ticket's QR symbol, black on white, in the middle.
fn qr_video(code: &str, path: &Path) {
    let symbol =
        qrcode::QrCode::with_error_correction_level(code.as_bytes(), qrcode::EcLevel::M).unwrap();
    let modules = symbol.width();
    let colours = symbol.to_colors();
    let side = (modules + 8) * MODULE_PX;
    assert!(side <= HEIGHT, "the symbol fits the frame: {side} px");
    let (left, top) = ((WIDTH - side) / 2, (HEIGHT - side) / 2);
    let mut luma = vec![235u8; WIDTH * HEIGHT];
    for (i, colour) in colours.iter().enumerate() {
        if *colour != qrcode::Color::Dark {
            continue;
        }
        let (mx, my) = (i % modules + 4, i / modules + 4);
        for y in 0..MODULE_PX {
            let row = (top + my * MODULE_PX + y) * WIDTH;
            let from = row + left + mx * MODULE_PX;
            luma[from..from + MODULE_PX].fill(16);
        }
    }
    let chroma = vec![128u8; WIDTH * HEIGHT / 2];
    let mut video = format!("YUV4MPEG2 W{WIDTH} H{HEIGHT} F10:1 Ip A1:1 C420jpeg\n").into_bytes();
    for _ in 0..10 {
        video.extend_from_slice(b"FRAME\n");
        video.extend_from_slice(&luma);
        video.extend_from_slice(&chroma);
    }
    std::fs::write(path, video).unwrap();
}

#[tokio::test]
async fn the_door_admits_a_ticket_read_through_the_camera() {
    let app = spawn_app().await;
    let (concert, seats) = app
        .concert_and_seats(json!({"rows": 1, "seatsPerRow": 2, "holdSeconds": 300}))
        .await;
    let (_, token) = app.user("camera-holder").await;
    let tickets = tickets_of(&app, &token, &seats[..1]).await;
    let video: PathBuf =
        std::env::temp_dir().join(format!("ticket-qr-{}-{concert}.y4m", std::process::id()));
    qr_video(&tickets[0].1, &video);

    let pairing = super::pairing_code(&app, concert, "North").await;
    let driver = Chromedriver::start().await;
    let door = driver.browser_with_camera(412, 915, &video).await;
    super::pair_door(&door, &app.base, &pairing, "North").await;

    // As on a browser without a detector of its own, whatever this
    // Chromium has: the vendored decoder reads the frame.
    door.script("delete window.BarcodeDetector;", vec![]).await;
    let camera = door
        .wait_element(".door-camera-wrap button", Some("Use the camera"))
        .await;
    door.click(&camera).await;
    door.wait_element(".verdict.ok", Some("Admitted · seat A1"))
        .await;
    door.screenshot(&screenshot_dir().join("door-camera.png"))
        .await;
    let admitted: Vec<(u64, String)> =
        sqlx::query_as("SELECT ticket_id, outcome FROM check_ins ORDER BY id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(admitted, [(tickets[0].0, "ADMITTED".to_owned())]);
    assert_eq!(door.console_errors().await, Vec::<String>::new());
    door.close().await;
    let _ = std::fs::remove_file(&video);
}
