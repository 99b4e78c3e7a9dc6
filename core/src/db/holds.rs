//! Holds that ran out, written down: the sweep that sets them EXPIRED,
//! frees their seats and announces it. Decisions already treat such seats
//! as free the moment the hold ends; the sweep makes statuses and counts
//! say so within seconds, and emits the ReservationExpired event.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{BindIds as _, IdList, Traced as _};
use super::{outbox, reservations};
use crate::domain::events::{EventKind, ReservationEvent, ReservedSeat, Subject};
use crate::domain::{
    ConcertId, QueueId, ReservationId, ReservationStatus, SeatId, SeatPrice, UserId,
};

/// Up to `limit` reservations of one concert (the one whose hold ended
/// first) that are HELD past their hold's end at `now`. A plain read: the
/// sweep locks what it changes afterwards.
pub async fn due(
    conn: &mut MySqlConnection,
    now: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<ReservationId>, sqlx::Error> {
    async move {
        let first: Option<(ConcertId,)> = sqlx::query_as(
            "SELECT concert_id FROM reservations WHERE status = 'HELD' AND hold_expires_at <= ? \
             ORDER BY hold_expires_at LIMIT 1",
        )
        .bind(now.naive_utc())
        .fetch_optional(&mut *conn)
        .await?;
        let Some((concert,)) = first else {
            return Ok(Vec::new());
        };
        let ids: Vec<(ReservationId,)> = sqlx::query_as(
            "SELECT id FROM reservations WHERE status = 'HELD' AND hold_expires_at <= ? AND concert_id = ? \
             ORDER BY hold_expires_at LIMIT ?",
        )
        .bind(now.naive_utc())
        .bind(concert)
        .bind(limit)
        .fetch_all(conn)
        .await?;
        Ok(ids.into_iter().map(|(id,)| id).collect())
    }
    .traced("SELECT", "reservations")
    .await
}

#[derive(sqlx::FromRow)]
struct Expiring {
    id: ReservationId,
    user_id: UserId,
    concert_id: ConcertId,
    queue_id: Option<QueueId>,
    hold_expires_at: Option<DateTime<Utc>>,
}

/// Expires those of `ids` whose seats nobody else holds right now (they are
/// skipped, for the next sweep) and that are still HELD past their end:
/// status EXPIRED, claims ended, seats AVAILABLE unless someone took them
/// since, one ReservationExpired event each. Call inside a transaction;
/// returns the reservations expired.
pub async fn expire(
    conn: &mut MySqlConnection,
    ids: &[ReservationId],
    now: DateTime<Utc>,
) -> Result<Vec<ReservationId>, sqlx::Error> {
    async move {
        let mut seats_of: BTreeMap<ReservationId, Vec<SeatId>> = BTreeMap::new();
        let mut prices: HashMap<SeatId, SeatPrice> = HashMap::new();
        for (reservation, seat, price) in reservations::claims_of(conn, ids).await? {
            seats_of.entry(reservation).or_default().push(seat);
            if let Some(price) = price {
                prices.insert(seat, price);
            }
        }
        let mut seat_ids: Vec<SeatId> = seats_of.values().flatten().copied().collect();
        seat_ids.sort_unstable();
        seat_ids.dedup();
        // Seats first, in id order, as every writer; a seat someone holds
        // (a decision taking it, a confirm) is skipped, not waited for.
        let Some(seats_list) = IdList::of(&seat_ids) else {
            return Ok(Vec::new());
        };
        let select = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT id, seat_number FROM seats WHERE id IN ({seats_list}) ORDER BY id FOR UPDATE SKIP LOCKED"
        )));
        let locked: Vec<(SeatId, String)> =
            select.bind_ids(&seats_list).fetch_all(&mut *conn).await?;
        let numbers: HashMap<SeatId, String> = locked.into_iter().collect();
        let ready: Vec<ReservationId> = seats_of
            .iter()
            .filter(|(_, seats)| seats.iter().all(|s| numbers.contains_key(s)))
            .map(|(id, _)| *id)
            .collect();
        let Some(ready_list) = IdList::of(&ready) else {
            return Ok(Vec::new());
        };
        let select = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT id, user_id, concert_id, queue_id, hold_expires_at FROM reservations FORCE INDEX (PRIMARY) \
             WHERE id IN ({ready_list}) AND status = 'HELD' AND hold_expires_at <= ? ORDER BY id FOR UPDATE"
        )));
        let expiring: Vec<Expiring> = select.bind_ids(&ready_list)
            .bind(now.naive_utc())
            .fetch_all(&mut *conn)
            .await?;
        let expired: Vec<ReservationId> = expiring.iter().map(|r| r.id).collect();
        reservations::end(conn, &expired, ReservationStatus::Expired, now).await?;
        let freed: Vec<SeatId> = expired
            .iter()
            .flat_map(|id| seats_of[id].iter().copied())
            .collect();
        super::seats::free_unclaimed(conn, &freed, now).await?;
        let events: Vec<ReservationEvent> = expiring
            .iter()
            .map(|r| {
                let seats: Vec<ReservedSeat> = seats_of[&r.id]
                    .iter()
                    .map(|s| ReservedSeat {
                        seat_id: *s,
                        seat_number: numbers.get(s).cloned().unwrap_or_default(),
                        price: prices.get(s).cloned(),
                        place: crate::domain::SeatPlace::default(),
                    })
                    .collect();
                ReservationEvent::new(
                    EventKind::Expired,
                    &Subject {
                        reservation_id: r.id,
                        queue_id: r.queue_id,
                        user_id: r.user_id,
                        concert_id: r.concert_id,
                        seats: &seats,
                        hold_expires_at: r.hold_expires_at,
                        payment_reference: None,
                    },
                    now,
                )
            })
            .collect();
        outbox::record(conn, &events, now).await?;
        Ok(expired)
    }
    .traced("UPDATE", "reservations")
    .await
}
