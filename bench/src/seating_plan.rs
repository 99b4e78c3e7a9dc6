//! A venue's plan through the API (issue 47): the time `PUT
//! /api/concerts/{id}/seating-plan` takes for a plan of `--seats` seats (the
//! example venue: stalls, premium rows, a balcony), against the same
//! number of seats made as rows × seatsPerRow by `POST /api/concerts`, the
//! baseline, in the same run.

use std::time::Instant;

use anyhow::ensure;
use clap::Args as ClapArgs;
use reqwest::Method;
use serde_json::json;
use ticket_core::domain::seating_plan::example;

use crate::door::{Api, Common};

#[derive(ClapArgs)]
pub struct Args {
    #[command(flatten)]
    api: Common,
    /// Seats of the plan: rows of 250, four fifths stalls, the rest balcony.
    #[arg(long, default_value_t = 50_000)]
    seats: u32,
    #[arg(long, default_value_t = 3)]
    runs: usize,
}

const WIDTH: u32 = 250;

pub async fn run(args: Args) -> anyhow::Result<()> {
    let api = Api::new(&args.api).await?;
    let rows = args.seats.div_ceil(WIDTH);
    let balcony = rows / 5;
    let plan = serde_json::to_value(example::venue(rows - balcony, balcony, WIDTH))?;
    let bytes = serde_json::to_vec(&plan)?.len();
    let categories: Vec<_> = example::CATEGORIES
        .iter()
        .map(|name| json!({"name": name, "price": 5000, "currency": "EUR"}))
        .collect();
    for run in 1..=args.runs {
        let started = Instant::now();
        let (status, grid) = api
            .call(
                Method::POST,
                "/api/concerts",
                &api.admin,
                Some(json!({"title": format!("Grid {run}"), "venue": "Hall", "concertDate": "2099-05-01T19:00:00Z",
                            "rows": rows, "seatsPerRow": WIDTH, "categories": categories})),
            )
            .await?;
        ensure!(status == 201, "concert: {status} {grid}");
        let grid_secs = started.elapsed().as_secs_f64();
        let (status, concert) = api
            .call(
                Method::POST,
                "/api/concerts",
                &api.admin,
                Some(json!({"title": format!("Plan {run}"), "venue": "Hall", "concertDate": "2099-05-01T19:00:00Z",
                            "rows": 1, "seatsPerRow": 1, "categories": categories})),
            )
            .await?;
        ensure!(status == 201, "concert: {status} {concert}");
        let id = concert["id"].as_u64().unwrap_or_default();
        let started = Instant::now();
        let (status, put) = api
            .call(
                Method::PUT,
                &format!("/api/concerts/{id}/seating-plan"),
                &api.admin,
                Some(plan.clone()),
            )
            .await?;
        let plan_secs = started.elapsed().as_secs_f64();
        ensure!(status == 200, "plan: {status} {put}");
        println!(
            "run {run}: {} seats: rows × seatsPerRow (POST /api/concerts) {grid_secs:.2} s; \
             seating plan of {:.1} MB (PUT) {plan_secs:.2} s ({:.2}× the grid)",
            put["seatCount"],
            bytes as f64 / 1e6,
            plan_secs / grid_secs
        );
    }
    Ok(())
}
