//! The real `ticket-worker` executable stops cleanly when asked to.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn the_worker_exits_zero_on_sigterm() {
    let url = std::env::var("DATABASE_URL").expect("DATABASE_URL must be set; run `make test`");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ticket-worker"))
        .env_clear()
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines().map_while(Result::ok);
    assert!(
        lines.any(|line| line.contains("waiting for work")),
        "the worker never reached its loop"
    );

    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "worker ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "exit status after SIGTERM: {status}");
    assert!(lines.any(|line| line.contains("worker stopped")));
}
