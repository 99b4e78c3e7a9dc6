//! README's five-minute walk, run as it stands against the real server and
//! a worker: what a newcomer copies first must work.

use std::time::Duration;

use ticket_worker::Mode;
use tokio_util::sync::CancellationToken;

use crate::helpers::{ADMIN_PASSWORD, spawn_app};

/// The walk's shell block, without the two lines a reader edits (the
/// address and the dev admin's password come from the environment).
fn walk() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README.md");
    let (_, block) = readme
        .split_once("<!-- walk -->")
        .expect("the walk's marker");
    let (block, _) = block.split_once("<!-- /walk -->").expect("the walk's end");
    let block = block
        .trim()
        .strip_prefix("```sh")
        .and_then(|b| b.strip_suffix("```"))
        .expect("a sh code block");
    block
        .lines()
        .filter(|line| !line.starts_with("TICKET=") && !line.starts_with("ADMIN_PASSWORD="))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_walk_runs_as_written() {
    let app = spawn_app().await;
    let shutdown = CancellationToken::new();
    let worker = app.worker("walk", Mode::Batch, 100, Duration::from_secs(30));
    let stop = shutdown.clone();
    let running = tokio::spawn(async move { worker.run(stop).await });
    let script = walk();
    let base = app.base.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("bash")
            .args(["-euo", "pipefail", "-c", &script])
            .env("TICKET", base)
            .env("ADMIN_PASSWORD", ADMIN_PASSWORD)
            .output()
            .expect("bash runs")
    })
    .await
    .unwrap();
    shutdown.cancel();
    running.await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the walk failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    let decided: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(decided["status"], "SUCCESS");
    assert_eq!(decided["seatIds"].as_array().map(Vec::len), Some(2));
    assert_eq!(&lines[1..], ["CONFIRMED", "CANCELLED"]);
    app.assert_invariants().await;
}

/// With a wrong admin password, as a newcomer pastes it into a shell (no
/// `set -e`), the walk says why and ends instead of polling for ever
/// (issue 58: it hung, silently).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_walk_with_a_wrong_password_says_so_and_ends() {
    let app = spawn_app().await;
    let script = walk();
    let base = app.base.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("timeout")
            .args(["60", "bash", "-c", &script])
            .env("TICKET", base)
            .env("ADMIN_PASSWORD", "not-the-password")
            .output()
            .expect("bash runs")
    })
    .await
    .unwrap();
    assert_ne!(out.status.code(), Some(124), "the walk hung");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("The admin could not log in: set ADMIN_PASSWORD"),
        "{stderr}"
    );
}
