//! The real `ticket-api` under a crowd of sign-ups and logins keeps within
//! the pod's memory: each Argon2 hash needs 19 MiB, and the areas freed after
//! each one used to stay with the allocator (~650 MB after 100 concurrent
//! sign-ups, against the chart's 512 Mi limit).

use std::process::Stdio;

use serde_json::json;
use ticket_core::testing::TestDatabase;

use crate::helpers::{ChildLog, Running, SECRET, client, executable};

/// What a process holds now and the most it ever held, from the kernel.
struct Memory {
    rss_kib: u64,
    peak_kib: u64,
}

fn memory_of(pid: u32) -> Memory {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"))
    };
    Memory {
        rss_kib: field("VmRSS:"),
        peak_kib: field("VmHWM:"),
    }
}

#[tokio::test]
async fn a_crowd_signing_up_and_logging_in_stays_within_the_pods_memory() {
    let db = TestDatabase::create().await;
    let url = db.url();
    assert!(
        executable("ticket-api", &url)
            .arg("migrate")
            .status()
            .unwrap()
            .success()
    );
    let mut child = Running(
        executable("ticket-api", &url)
            .env("TICKET_API_ADDR", "127.0.0.1:0")
            .env(
                "TICKET_AUTH_SECRET",
                String::from_utf8_lossy(SECRET).as_ref(),
            )
            .env("TICKET_CODE_KEYS", crate::helpers::TICKET_KEY)
            // One client address plays the crowd.
            .env("TICKET_ANONYMOUS_REQUESTS_PER_SEC", "0")
            .env("TICKET_SIGNUPS_PER_MINUTE_PER_CLIENT", "0")
            .env("TICKET_LOGINS_PER_MINUTE_PER_CLIENT", "0")
            .env("TICKET_LOGINS_PER_MINUTE_PER_NICKNAME", "0")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id();
    let addr = ChildLog::follow(child.0.stderr.take().unwrap()).listening_addr();
    let base = format!("http://{addr}");
    let client = client();
    let at_start = memory_of(pid);

    for burst in 0..3 {
        let nicks: Vec<String> = (0..100).map(|i| format!("crowd{burst}x{i}")).collect();
        for (route, expected) in [("/api/users", 201), ("/api/auth/login", 200)] {
            let answers = futures::future::join_all(nicks.iter().map(|nick| {
                client
                    .post(format!("{base}{route}"))
                    .json(&json!({"nickName": nick, "password": "a crowd's password"}))
                    .send()
            }))
            .await;
            for answer in answers {
                assert_eq!(answer.unwrap().status(), expected, "{route}");
            }
        }
    }
    let after = memory_of(pid);
    drop(child);
    let mib = |kib: u64| kib / 1024;
    eprintln!(
        "ticket-api: {} MiB at start, {} MiB after 3 bursts, peak {} MiB",
        mib(at_start.rss_kib),
        mib(after.rss_kib),
        mib(after.peak_kib)
    );
    // The bounds, in MB (10^6 bytes).
    assert!(
        after.rss_kib * 1024 <= 96_000_000,
        "{} MiB held after the crowd",
        mib(after.rss_kib)
    );
    assert!(
        after.peak_kib * 1024 <= 160_000_000,
        "{} MiB at the peak",
        mib(after.peak_kib)
    );
}
