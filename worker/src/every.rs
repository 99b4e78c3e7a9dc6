//! Work a worker does now and then on its claim path, at most once a period.

use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub(crate) struct Every {
    period: Duration,
    /// When it was last done (None: never, or asked for again).
    last: Mutex<Option<Instant>>,
}

impl Every {
    pub(crate) const fn new(period: Duration) -> Self {
        Self {
            period,
            last: Mutex::new(None),
        }
    }

    /// Whether it is due; if so, the next time is one period from now.
    pub(crate) fn due(&self) -> bool {
        let Ok(mut last) = self.last.lock() else {
            return true;
        };
        let due = last.is_none_or(|at| at.elapsed() >= self.period);
        if due {
            *last = Some(Instant::now());
        }
        due
    }

    /// Due again at the next look.
    pub(crate) fn again(&self) {
        if let Ok(mut last) = self.last.lock() {
            *last = None;
        }
    }
}
