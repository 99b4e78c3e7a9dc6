//! The loop of a worker's background chores (money, cancelled concerts):
//! a pass after another until shutdown, paced by what each pass says, a
//! failed pass logged and tried again after an idle pause.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// Runs `pass` until `shutdown`; after each, sleeps what `pause` makes of
/// its outcome (with jitter), or `idle` after a failure (logged as
/// `what`).
pub(crate) async fn until_shutdown<T, E, F, Fut>(
    shutdown: CancellationToken,
    what: &'static str,
    idle: Duration,
    mut pass: F,
    pause: impl Fn(&T) -> Duration,
) where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    loop {
        let outcome = tokio::select! {
            () = shutdown.cancelled() => return,
            outcome = pass() => outcome,
        };
        let wait = match &outcome {
            Ok(done) => pause(done),
            Err(e) => {
                tracing::warn!(error = %e, "{what} pass failed; trying again");
                idle
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(crate::random::jitter(wait, 0.2)) => {}
        }
    }
}
