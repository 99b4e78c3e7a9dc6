//! `ticket-bench`: measurements for docs/benchmarks.md. Each command makes a
//! fresh database on the server DATABASE_URL names, so runs never interfere.

mod checkout;
mod door;
mod drain;
mod enqueue;
mod fans_open;
mod latency;
mod load;
mod mail;
mod many_concerts;
mod million;
mod otlp_sink;
mod page;
mod payments;
mod per_request;
mod pow;
mod pow_page;
mod seating_plan;
mod streams;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "ticket-bench",
    about = "Benchmarks of the ticket reservation system"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decisions per second: queue N requests over M seats, let W workers drain them.
    Drain(drain::Args),
    /// Holds per second the expiry sweep writes down: N ended holds, swept.
    Expiry(checkout::ExpiryArgs),
    /// Events per second the relay delivers to a local receiver.
    Webhooks(checkout::WebhookArgs),
    /// Prepare a database, users, tokens and seats for an HTTP enqueue load test.
    PrepareEnqueue(enqueue::Args),
    /// Time from enqueue to decision, read from the queue rows of a finished run.
    Latency(latency::Args),
    /// POST reservation requests (or poll statuses) at a constant rate (open loop).
    Load(load::Args),
    /// Server-Sent Events: N streams on one API instance while a worker decides them.
    Streams(streams::Args),
    /// A database for `fans-open`: concerts of a few seats, a few users.
    FansOpenPrepare(fans_open::PrepareArgs),
    /// Enqueue while each user's open requests pile up in other concerts.
    FansOpen(fans_open::Args),
    /// A database for `many-concerts`: concerts on sale with open requests.
    ManyConcertsPrepare(many_concerts::PrepareArgs),
    /// Status polls over one concert's requests, then over a thousand concerts'.
    ManyConcerts(many_concerts::Args),
    /// A database for `million`: a concert whose lottery is open, its seats and users.
    MillionPrepare(million::PrepareArgs),
    /// A million in one line: enqueue, polls and streams before and after the opening, the sale.
    Million(million::Args),
    /// A seating plan of 50,000 seats PUT, against as many made of rows × seatsPerRow.
    SeatingPlan(seating_plan::Args),
    /// The concert page in headless Chromium: its weight and time to a usable seat map.
    Page(page::Args),
    /// Proof of work: the API's check of a solution, and native solves per level.
    Pow(pow::Args),
    /// The proof of work solved by the page in headless Chromium, per level.
    PowPage(pow_page::Args),
    /// Holds confirmed through the API, timed (tickets' cost to the confirm).
    Confirm(door::ConfirmArgs),
    /// Orders paid by hand refunded by the admin through the API, timed.
    Refunds(door::ConfirmArgs),
    /// Check-ins with concurrent scanners, and a code verified offline in Chromium.
    Door(door::DoorArgs),
    /// Payments made and holds sold by webhook per second, against localstripe.
    Payments(payments::PayArgs),
    /// A show of sold orders cancelled: time until every refund is done, duplicates.
    CancelShow(payments::CancelArgs),
    /// Mails delivered to a local SMTP server (aiosmtpd): confirmations with their tickets.
    Mail(mail::Args),
    /// Print the number of queue rows.
    CountQueue(latency::DbArgs),
    /// Add decided requests past the retention (for the sweeper to remove).
    AgeHistory(latency::AgeArgs),
    /// Wait until no request is open.
    WaitDrained(latency::DbArgs),
    /// SIGKILL a worker the moment it holds claimed rows (a mid-batch kill).
    KillWhenClaimed(latency::KillWhenClaimedArgs),
    /// Print the server's count of deadlocks so far (InnoDB).
    Deadlocks(latency::DbArgs),
    /// Drop the database of a finished run.
    DropDatabase(latency::DbArgs),
    /// Accept and discard OTLP/HTTP trace exports (a collector stand-in).
    OtlpSink(otlp_sink::Args),
    /// Check that every recorded queue id exists and is decided.
    VerifyDecided(latency::VerifyArgs),
    /// Lock every seat row in one transaction for a while (a slow database).
    HoldLocks(latency::HoldArgs),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let telemetry = ticket_core::telemetry::init("ticket-bench");
    let result = match Cli::parse().command {
        Command::Drain(args) => drain::run(args).await,
        Command::Expiry(args) => checkout::expiry(args).await,
        Command::Webhooks(args) => checkout::webhooks(args).await,
        Command::PrepareEnqueue(args) => enqueue::run(args).await,
        Command::Latency(args) => latency::run(args).await,
        Command::Load(args) => load::run(args).await,
        Command::Streams(args) => streams::run(args).await,
        Command::FansOpenPrepare(args) => fans_open::prepare(args).await,
        Command::FansOpen(args) => fans_open::run(args).await,
        Command::ManyConcertsPrepare(args) => many_concerts::prepare(args).await,
        Command::ManyConcerts(args) => many_concerts::run(args).await,
        Command::MillionPrepare(args) => million::prepare(args).await,
        Command::Million(args) => million::run(args).await,
        Command::Page(args) => page::run(args).await,
        Command::Pow(args) => pow::run(args).await,
        Command::PowPage(args) => pow_page::run(args).await,
        Command::Confirm(args) => door::confirm(args).await,
        Command::Refunds(args) => door::refunds(args).await,
        Command::Door(args) => door::door(args).await,
        Command::Mail(args) => mail::run(args).await,
        Command::Payments(args) => payments::pay(args).await,
        Command::SeatingPlan(args) => seating_plan::run(args).await,
        Command::CancelShow(args) => payments::cancel(args).await,
        Command::CountQueue(args) => latency::count(args).await,
        Command::AgeHistory(args) => latency::age_history(args).await,
        Command::WaitDrained(args) => latency::wait_drained(args).await,
        Command::KillWhenClaimed(args) => latency::kill_when_claimed(args).await,
        Command::Deadlocks(args) => latency::deadlocks(args).await,
        Command::DropDatabase(args) => latency::drop_database(args).await,
        Command::OtlpSink(args) => otlp_sink::run(args).await,
        Command::VerifyDecided(args) => latency::verify_decided(args).await,
        Command::HoldLocks(args) => latency::hold_locks(args).await,
    };
    telemetry.shutdown();
    result
}
