//! Proof of work: how long the API takes to check a solution (it must be
//! microseconds: every request of a concert that asks for work pays it),
//! and how long a client solves each level natively (one thread; a
//! browser's figure is measured in Chromium, see docs/benchmarks.md).

use std::time::Instant;

use anyhow::Context as _;
use base64::Engine as _;
use clap::Args as ClapArgs;
use ticket_api::proof_of_work::Challenges;
use ticket_core::domain::{ConcertId, ProofOfWork, UserId};

#[derive(ClapArgs)]
pub struct Args {
    /// Checks timed.
    #[arg(long, default_value_t = 20_000)]
    checks: u32,
    /// Solves timed per level.
    #[arg(long, default_value_t = 20)]
    solves: u32,
    /// Highest level solved.
    #[arg(long, default_value_t = 8)]
    max_level: u8,
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let challenges = Challenges::new(b"bench-secret-bench-secret-bench-secret");
    let (user, concert) = (UserId(7), ConcertId(3));
    let expires = chrono::Utc::now() + chrono::Duration::seconds(60);
    let level = ProofOfWork::parse(6)?;
    let challenge = challenges
        .issue(user, concert, level, expires)
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let solution = altcha::solve_challenge(altcha::SolveChallengeOptions::new(&challenge))?
        .context("not solved")?;
    let payload = serde_json::json!({"challenge": challenge, "solution": solution});
    let header: axum::http::HeaderValue = base64::engine::general_purpose::STANDARD
        .encode(payload.to_string())
        .parse()?;
    let started = Instant::now();
    for _ in 0..args.checks {
        challenges
            .check(Some(&header), user, concert)
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    }
    let per_check = started.elapsed().as_secs_f64() / f64::from(args.checks);
    println!(
        "pow check: {} checks, {:.1} us per check (decode, HMAC, one SHA-256)",
        args.checks,
        per_check * 1e6
    );
    for raw in 1..=args.max_level {
        let level = ProofOfWork::parse(u64::from(raw))?;
        let mut times = Vec::with_capacity(args.solves as usize);
        for _ in 0..args.solves {
            let challenge = challenges
                .issue(user, concert, level, expires)
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
            let started = Instant::now();
            altcha::solve_challenge(altcha::SolveChallengeOptions::new(&challenge))?
                .context("not solved")?;
            times.push(started.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "pow solve level {raw}: expected {} hashes, median {:.1} ms, max {:.1} ms (native, one thread)",
            level.expected_hashes(),
            times[times.len() / 2],
            times[times.len() - 1]
        );
    }
    Ok(())
}
