//! The real `ticket-worker` executable, started, watched and signalled.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub fn spawn_worker(url: &str, extra_env: &[(&str, &str)]) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ticket-worker"))
        .env_clear()
        .env("DATABASE_URL", url)
        .env("RUST_LOG", "info")
        .env("TICKET_WORKER_HEALTH_ADDR", "127.0.0.1:0")
        .envs(extra_env.iter().copied())
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (lines, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    (child, receiver)
}

/// Waits (at most 20 s) for a log line containing `text`; returns the line.
pub fn expect_line(lines: &mpsc::Receiver<String>, text: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(text) => return line,
            Ok(_) => {}
            Err(_) => panic!("the worker never logged {text:?}"),
        }
    }
}

pub fn wait_for_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "worker did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn signal(child: &Child, name: &str) {
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args([name, &pid])
            .status()
            .unwrap()
            .success()
    );
}
