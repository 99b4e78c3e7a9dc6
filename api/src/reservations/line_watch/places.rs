//! Learning a request's rank, and a concert's line with its lottery
//! counted if nobody has counted it yet.

use std::collections::HashMap;

use ticket_core::db::line::{self, LineState};
use ticket_core::db::whole::Whole;
use ticket_core::domain::{ConcertId, LineKey, LinePart, LineRank, QueueId};

use super::LineWatch;

/// Lottery places kept (each costs two small reads to learn): beyond it
/// the memory starts again, so an instance's memory stays bounded.
const LOTTERY_PLACES_KEPT: usize = 100_000;
impl LineWatch {
    /// A request's rank: its own, or a lottery request's place once its
    /// lottery is counted (learnt once, then kept).
    pub(super) async fn rank_of(
        &self,
        id: QueueId,
        concert: ConcertId,
        key: LineKey,
        rank: Option<LineRank>,
    ) -> Result<Option<LineRank>, sqlx::Error> {
        if rank.is_some() || LinePart::of(key) != LinePart::Lottery {
            return Ok(rank);
        }
        if let Some(rank) = self.places().get(&id) {
            return Ok(Some(*rank));
        }
        let Some(count) = self
            .current()
            .lines
            .get(&concert)
            .and_then(|line| line.lottery)
        else {
            return Ok(None);
        };
        let mut conn = self.pool.acquire().await?;
        self.queries.inc();
        let Some(place) = line::lottery_place(&mut conn, concert, count, key, id).await? else {
            return Ok(None);
        };
        let rank = LineRank::new(LinePart::Lottery, place);
        let mut places = self.places();
        if places.len() >= LOTTERY_PLACES_KEPT {
            places.clear();
        }
        places.insert(id, rank);
        Ok(Some(rank))
    }

    /// The concerts' lines. An opened lottery nobody has counted yet (the
    /// workers count it within moments of the opening) is counted here, so
    /// that its places are known at the first question.
    pub(super) async fn fronts(
        &self,
        conn: &mut sqlx::MySqlConnection,
        concerts: &[ConcertId],
    ) -> Result<HashMap<ConcertId, LineState>, sqlx::Error> {
        self.queries.inc();
        let mut lines = line::fronts(conn, concerts).await?;
        let uncounted: Vec<ConcertId> = lines
            .iter()
            .filter(|(_, line)| line.lottery_to_count())
            .map(|(concert, _)| *concert)
            .collect();
        for concert in uncounted {
            let mut tx = Whole::begin(&mut *conn).await?;
            // Another process counting a long lottery holds its line for
            // seconds: its count will do, and this read goes on without.
            if let Err(e) = line::count_lottery(&mut tx, concert).await {
                tracing::debug!(error = %e, concert = concert.get(), "the lottery is being counted elsewhere");
                tx.rollback().await?;
                continue;
            }
            tx.commit().await?;
            self.queries.inc();
            lines.extend(line::fronts(conn, &[concert]).await?);
        }
        Ok(lines)
    }

    fn places(&self) -> std::sync::MutexGuard<'_, HashMap<QueueId, LineRank>> {
        self.lottery_places
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
