//! Concerts: their rows, the seats a layout makes, their sale settings,
//! deletion with everything of their own, and cancellation.
//!
//! Long because a concert's every column is read and written here, through
//! one column list, rather than spread over the features that set them.

use super::{BindIds as _, IdList, Traced as _};
use chrono::{DateTime, Utc};
use sqlx::{MySqlConnection, QueryBuilder};

use crate::domain::{
    ConcertDate, ConcertId, ConcertTitle, HoldDuration, LotteryWindow, MaxSeatsPerOrder,
    MaxSeatsPerUser, OfferDuration, OpensAt, OrganizerId, PageRequest, PresaleStartsAt,
    ProofOfWork, RefundableUntil, SaleWindow, SeatLayout, SeatStatus, Venue, VenueTimeZone,
};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ConcertRow {
    pub id: ConcertId,
    /// Who runs it (issue 60).
    pub organizer_id: OrganizerId,
    pub title: String,
    pub venue: String,
    pub concert_date: DateTime<Utc>,
    pub seat_count: u32,
    pub hold_seconds: u32,
    pub max_seats_per_order: u8,
    pub max_seats_per_user: u8,
    pub opens_at: Option<DateTime<Utc>>,
    pub presale_starts_at: Option<DateTime<Utc>>,
    pub lottery_window_seconds: u32,
    pub proof_of_work: u8,
    pub waiting_list_offer_seconds: u32,
    /// Until when a fan may refund their own tickets (none: never).
    pub refundable_until: Option<DateTime<Utc>>,
    /// Set by the operator's cancel: nothing more is sold, all is refunded.
    pub cancelled_at: Option<DateTime<Utc>>,
    pub cancel_reason: Option<String>,
    /// The venue's IANA zone (see [`ConcertRow::time_zone`]).
    pub time_zone: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl ConcertRow {
    pub fn time_zone(&self) -> VenueTimeZone {
        VenueTimeZone::from_stored(&self.time_zone)
    }

    pub fn sale(&self) -> SaleWindow {
        SaleWindow {
            opens_at: self.opens_at,
            lottery: LotteryWindow::parse(self.lottery_window_seconds.into()).unwrap_or_default(),
            presale_starts_at: self.presale_starts_at,
        }
    }
}

const COLUMNS: &str = "id, organizer_id, title, venue, concert_date, seat_count, hold_seconds, max_seats_per_order, \
                       max_seats_per_user, opens_at, presale_starts_at, lottery_window_seconds, \
                       proof_of_work, waiting_list_offer_seconds, refundable_until, cancelled_at, \
                       cancel_reason, time_zone, created_at, updated_at";

/// How a concert sells: its hold, its order size, its cap per fan, and
/// when its sale opens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    pub hold: HoldDuration,
    pub max_seats_per_order: MaxSeatsPerOrder,
    /// `None`: the order size.
    pub max_seats_per_user: Option<MaxSeatsPerUser>,
    pub opens_at: Option<OpensAt>,
    /// Before `opens_at` (the caller checks).
    pub presale_starts_at: Option<PresaleStartsAt>,
    pub lottery: LotteryWindow,
    pub proof_of_work: ProofOfWork,
    pub waiting_list_offer: OfferDuration,
    pub refundable_until: Option<RefundableUntil>,
    /// The venue's; the caller gives the server's when none is asked for.
    pub time_zone: VenueTimeZone,
}

impl Settings {
    pub fn cap_per_user(&self) -> MaxSeatsPerUser {
        self.max_seats_per_user
            .unwrap_or(MaxSeatsPerUser::same_as(self.max_seats_per_order))
    }
}

/// Seats per multi-row INSERT: 6 placeholders each stays far below the
/// 65,535 placeholders a prepared statement may have.
const SEAT_INSERT_CHUNK: usize = 2_000;

/// What a new concert is billed as: who runs it, what, where and when.
#[derive(Debug, Clone, Copy)]
pub struct Billing<'a> {
    pub organizer: OrganizerId,
    pub title: &'a ConcertTitle,
    pub venue: &'a Venue,
    pub date: ConcertDate,
}

/// Inserts the concert and all its seats. Call inside a transaction so that
/// a concert never exists with only part of its seats.
pub async fn insert_with_seats(
    conn: &mut MySqlConnection,
    billing: Billing<'_>,
    layout: SeatLayout,
    settings: Settings,
    now: DateTime<Utc>,
) -> Result<ConcertId, sqlx::Error> {
    async move {
        let done = sqlx::query(
            "INSERT INTO concerts (organizer_id, title, venue, concert_date, seat_count, hold_seconds, \
             max_seats_per_order, max_seats_per_user, opens_at, presale_starts_at, lottery_window_seconds, \
             proof_of_work, waiting_list_offer_seconds, refundable_until, time_zone, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(billing.organizer)
        .bind(billing.title.as_str())
        .bind(billing.venue.as_str())
        .bind(billing.date.get().naive_utc())
        .bind(layout.seat_count())
        .bind(settings.hold.seconds())
        .bind(settings.max_seats_per_order.get())
        .bind(settings.cap_per_user().get())
        .bind(settings.opens_at.map(|at| at.get().naive_utc()))
        .bind(settings.presale_starts_at.map(|at| at.get().naive_utc()))
        .bind(settings.lottery.seconds())
        .bind(settings.proof_of_work.get())
        .bind(settings.waiting_list_offer.seconds())
        .bind(settings.refundable_until.map(|at| at.get().naive_utc()))
        .bind(settings.time_zone.name())
        .bind(now.naive_utc())
        .bind(now.naive_utc())
        .execute(&mut *conn)
        .await?;
        let id = ConcertId(done.last_insert_id());

        let seats: Vec<_> = layout.seats().collect();
        for chunk in seats.chunks(SEAT_INSERT_CHUNK) {
            let mut insert = QueryBuilder::new(
                "INSERT INTO seats (concert_id, seat_number, sort_key, status, row_index, \
                 row_position, seat_rank, created_at, updated_at) ",
            );
            insert.push_values(chunk, |mut row, seat| {
                row.push_bind(id)
                    .push_bind(seat.number.as_str().to_owned())
                    .push_bind(seat.number.sort_key())
                    .push_bind("AVAILABLE")
                    .push_bind(seat.row)
                    .push_bind(seat.position)
                    .push_bind(seat.rank)
                    .push_bind(now.naive_utc())
                    .push_bind(now.naive_utc());
            });
            insert.build().execute(&mut *conn).await?;
        }
        Ok(id)
    }
    .traced("INSERT", "concerts")
    .await
}

pub async fn find(
    conn: &mut MySqlConnection,
    id: ConcertId,
) -> Result<Option<ConcertRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM concerts WHERE id = ?"
    )))
    .bind(id)
    .fetch_optional(conn)
    .traced("SELECT", "concerts")
    .await
}

/// Locks the concert row for the rest of the transaction and reads it.
pub async fn lock(
    conn: &mut MySqlConnection,
    id: ConcertId,
) -> Result<Option<ConcertRow>, sqlx::Error> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM concerts WHERE id = ? FOR UPDATE"
    )))
    .bind(id)
    .fetch_optional(conn)
    .traced("SELECT", "concerts")
    .await
}

/// A page of concerts, the soonest show first (shows already played last,
/// the latest first), and the total number of concerts.
pub async fn list(
    conn: &mut MySqlConnection,
    page: PageRequest,
    organizer: Option<OrganizerId>,
) -> Result<(Vec<ConcertRow>, u64), sqlx::Error> {
    async move {
        let rows = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM concerts WHERE (? IS NULL OR organizer_id = ?) \
              ORDER BY concert_date < UTC_TIMESTAMP(6), \
                       CASE WHEN concert_date >= UTC_TIMESTAMP(6) THEN concert_date END, \
                       concert_date DESC, id LIMIT ? OFFSET ?"
        )))
        .bind(organizer)
        .bind(organizer)
        .bind(page.size)
        .bind(page.offset())
        .fetch_all(&mut *conn)
        .await?;
        let (total,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM concerts WHERE (? IS NULL OR organizer_id = ?)")
                .bind(organizer)
                .bind(organizer)
                .fetch_one(&mut *conn)
                .await?;
        Ok((rows, total.unsigned_abs()))
    }
    .traced("SELECT", "concerts")
    .await
}

/// How many of a concert's seats have each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeatCounts {
    pub available: u64,
    pub held: u64,
    pub reserved: u64,
}

impl SeatCounts {
    pub fn of(self, status: SeatStatus) -> u64 {
        match status {
            SeatStatus::Available => self.available,
            SeatStatus::Held => self.held,
            SeatStatus::Reserved => self.reserved,
        }
    }
}

/// How many price categories and standing areas the concert has: the
/// lengths of its availability's counts by pool.
pub async fn pool_counts(
    conn: &mut MySqlConnection,
    id: ConcertId,
) -> Result<(usize, usize), sqlx::Error> {
    let (categories, areas): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM price_categories WHERE concert_id = ?), \
                (SELECT COUNT(*) FROM standing_areas WHERE concert_id = ?)",
    )
    .bind(id)
    .bind(id)
    .fetch_one(conn)
    .traced("SELECT", "price_categories")
    .await?;
    let count = |n: i64| usize::try_from(n).unwrap_or(0);
    Ok((count(categories), count(areas)))
}

/// How many of the concert's seats have each status.
pub async fn seat_counts(
    conn: &mut MySqlConnection,
    id: ConcertId,
) -> Result<SeatCounts, sqlx::Error> {
    let rows: Vec<(String, i64)> =
        sqlx::query_as("SELECT status, COUNT(*) FROM seats WHERE concert_id = ? GROUP BY status")
            .bind(id)
            .fetch_all(conn)
            .traced("SELECT", "seats")
            .await?;
    let count = |status: &str| {
        rows.iter()
            .find(|(s, _)| s == status)
            .map_or(0, |(_, n)| n.unsigned_abs())
    };
    Ok(SeatCounts {
        available: count("AVAILABLE"),
        held: count("HELD"),
        reserved: count("RESERVED"),
    })
}

/// A change to a concert: what is `None` stays as it is.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    pub title: Option<ConcertTitle>,
    pub venue: Option<Venue>,
    pub date: Option<ConcertDate>,
    pub hold: Option<HoldDuration>,
    pub max_seats_per_order: Option<MaxSeatsPerOrder>,
    pub max_seats_per_user: Option<MaxSeatsPerUser>,
    /// `Some(None)`: no opening time any more (on sale now).
    pub opens_at: Option<Option<OpensAt>>,
    /// `Some(None)`: no presale any more.
    pub presale_starts_at: Option<Option<PresaleStartsAt>>,
    pub proof_of_work: Option<ProofOfWork>,
    pub lottery: Option<LotteryWindow>,
    pub waiting_list_offer: Option<OfferDuration>,
    /// `Some(None)`: fans may no longer refund.
    pub refundable_until: Option<Option<RefundableUntil>>,
    pub time_zone: Option<VenueTimeZone>,
}

/// Changes what is given and leaves the rest.
pub async fn update(
    conn: &mut MySqlConnection,
    id: ConcertId,
    changes: &Changes,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE concerts SET title = COALESCE(?, title), venue = COALESCE(?, venue), \
         concert_date = COALESCE(?, concert_date), hold_seconds = COALESCE(?, hold_seconds), \
         max_seats_per_order = COALESCE(?, max_seats_per_order), \
         max_seats_per_user = COALESCE(?, max_seats_per_user), \
         opens_at = IF(?, ?, opens_at), presale_starts_at = IF(?, ?, presale_starts_at), \
         lottery_window_seconds = COALESCE(?, lottery_window_seconds), \
         proof_of_work = COALESCE(?, proof_of_work), \
         waiting_list_offer_seconds = COALESCE(?, waiting_list_offer_seconds), \
         refundable_until = IF(?, ?, refundable_until), \
         time_zone = COALESCE(?, time_zone), \
         updated_at = ? WHERE id = ?",
    )
    .bind(changes.title.as_ref().map(ConcertTitle::as_str))
    .bind(changes.venue.as_ref().map(Venue::as_str))
    .bind(changes.date.map(|d| d.get().naive_utc()))
    .bind(changes.hold.map(HoldDuration::seconds))
    .bind(changes.max_seats_per_order.map(MaxSeatsPerOrder::get))
    .bind(changes.max_seats_per_user.map(MaxSeatsPerUser::get))
    .bind(changes.opens_at.is_some())
    .bind(changes.opens_at.flatten().map(|at| at.get().naive_utc()))
    .bind(changes.presale_starts_at.is_some())
    .bind(
        changes
            .presale_starts_at
            .flatten()
            .map(|at| at.get().naive_utc()),
    )
    .bind(changes.lottery.map(LotteryWindow::seconds))
    .bind(changes.proof_of_work.map(ProofOfWork::get))
    .bind(changes.waiting_list_offer.map(OfferDuration::seconds))
    .bind(changes.refundable_until.is_some())
    .bind(
        changes
            .refundable_until
            .flatten()
            .map(|at| at.get().naive_utc()),
    )
    .bind(changes.time_zone.map(VenueTimeZone::name))
    .bind(now.naive_utc())
    .bind(id)
    .execute(conn)
    .traced("UPDATE", "concerts")
    .await?;
    Ok(())
}

/// Keeps `seat_count` in step when a seat is added (+1) or removed (-1).
pub async fn adjust_seat_count(
    conn: &mut MySqlConnection,
    id: ConcertId,
    delta: i32,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE concerts SET seat_count = seat_count + ? WHERE id = ?")
        .bind(delta)
        .bind(id)
        .execute(conn)
        .traced("UPDATE", "concerts")
        .await?;
    Ok(())
}

/// Locks every seat of the concert, in id order (the order a deciding
/// worker locks seats in, so the two cannot deadlock); returns how many.
/// Afterwards no request for these seats can be written until the
/// transaction ends: the queue's foreign-key check waits for the seat's lock.
pub async fn lock_seats(conn: &mut MySqlConnection, id: ConcertId) -> Result<u32, sqlx::Error> {
    async move {
        let seats: Vec<(u64,)> =
            sqlx::query_as("SELECT id FROM seats WHERE concert_id = ? ORDER BY id")
                .bind(id)
                .fetch_all(&mut *conn)
                .await?;
        let ids: Vec<u64> = seats.into_iter().map(|(id,)| id).collect();
        // chunks() yields no empty chunk, so every list has ids.
        for list in ids.chunks(LOCK_CHUNK).filter_map(IdList::of) {
            let select = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT id FROM seats FORCE INDEX (PRIMARY) WHERE id IN ({list}) ORDER BY id FOR UPDATE"
            )));
            let _: Vec<(u64,)> = select.bind_ids(&list)
                .fetch_all(&mut *conn)
                .await?;
        }
        Ok(u32::try_from(ids.len()).unwrap_or(u32::MAX))
    }
    .traced("SELECT", "seats")
    .await
}

/// Counts the concert's seats (and standing places) again after they were
/// replaced.
pub async fn recount_seats(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE concerts SET seat_count = (SELECT COUNT(*) FROM seats WHERE concert_id = ?), \
         updated_at = ? WHERE id = ?",
    )
    .bind(concert)
    .bind(now.naive_utc())
    .bind(concert)
    .execute(conn)
    .traced("UPDATE", "concerts")
    .await?;
    Ok(())
}

/// Seats locked per statement by [`lock_seats`].
const LOCK_CHUNK: usize = 1024;

/// Whether anyone ever asked for or held a seat of the concert: a request in
/// the queue (open or decided) or a reservation (of any status). Such a
/// concert is part of people's history and is not deleted.
pub async fn has_history(conn: &mut MySqlConnection, id: ConcertId) -> Result<bool, sqlx::Error> {
    let (held,): (bool,) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM reservations WHERE concert_id = ?) \
             OR EXISTS (SELECT 1 FROM seats s JOIN reservation_queue q ON q.seat_id = s.id \
                        WHERE s.concert_id = ?) \
             OR EXISTS (SELECT 1 FROM seats s JOIN request_seats rs ON rs.seat_id = s.id \
                        WHERE s.concert_id = ?) \
             OR EXISTS (SELECT 1 FROM request_pools WHERE concert_id = ?) \
             OR EXISTS (SELECT 1 FROM desk_shifts WHERE concert_id = ?)",
    )
    .bind(id)
    .bind(id)
    .bind(id)
    .bind(id)
    .bind(id)
    .fetch_one(conn)
    .traced("SELECT", "reservations")
    .await?;
    Ok(held)
}

/// Deletes the concert with its seats. Call with its seats and the concert
/// locked and [`has_history`] false.
pub async fn delete_with_seats(
    conn: &mut MySqlConnection,
    id: ConcertId,
) -> Result<bool, sqlx::Error> {
    async move {
        // A list can only have offered seats of a concert with history,
        // which is never deleted; one without offers goes with it. So do
        // its door's scanners (no ticket, so no scan), a lottery's counts,
        // the challenges spent on requests that were refused, and rates.
        for table in [
            "access_codes",
            "waiting_list_entries",
            "waiting_lists",
            "sale_lines",
            "price_categories",
            "seating_plans",
            "standing_areas",
            "scanners",
            "lottery_buckets",
            "spent_challenges",
            "request_rates",
            "decision_rates",
        ] {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE concert_id = ?"
            )))
            .bind(id)
            .execute(&mut *conn)
            .await?;
        }
        sqlx::query("DELETE FROM seats WHERE concert_id = ?")
            .bind(id)
            .execute(&mut *conn)
            .await?;
        let done = sqlx::query("DELETE FROM concerts WHERE id = ?")
            .bind(id)
            .execute(&mut *conn)
            .await?;
        Ok(done.rows_affected() == 1)
    }
    .traced("DELETE", "concerts")
    .await
}

/// Cancels the concert (locked by the caller) at `now`, once; false when
/// it was cancelled before.
pub async fn cancel(
    conn: &mut MySqlConnection,
    id: ConcertId,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE concerts SET cancelled_at = ?, cancel_reason = ?, updated_at = ? \
          WHERE id = ? AND cancelled_at IS NULL",
    )
    .bind(now.naive_utc())
    .bind(reason)
    .bind(now.naive_utc())
    .bind(id)
    .execute(conn)
    .traced("UPDATE", "concerts")
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The cancelled concerts, newest first (each one's remaining
/// reservations are the workers' to end and refund).
pub async fn cancelled(conn: &mut MySqlConnection) -> Result<Vec<ConcertId>, sqlx::Error> {
    let rows: Vec<(ConcertId,)> = sqlx::query_as(
        "SELECT id FROM concerts WHERE cancelled_at IS NOT NULL ORDER BY cancelled_at DESC",
    )
    .fetch_all(conn)
    .traced("SELECT", "concerts")
    .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// How a cancelled concert's refunds stand: orders refunded (or ended
/// with nothing to give back), orders and refunds still to do, refunds
/// the provider refused.
#[derive(Debug, Clone, Copy, Default, sqlx::FromRow)]
pub struct CancellationProgress {
    pub refunded: i64,
    pub pending: i64,
    pub failed: i64,
}

pub async fn cancellation_progress(
    conn: &mut MySqlConnection,
    id: ConcertId,
) -> Result<CancellationProgress, sqlx::Error> {
    sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM refunds WHERE concert_id = ? AND reason = 'CONCERT_CANCELLED' \
                   AND status = 'SUCCEEDED') AS refunded, \
                (SELECT COUNT(*) FROM refunds WHERE concert_id = ? AND reason = 'CONCERT_CANCELLED' \
                   AND status = 'PENDING') \
              + (SELECT COUNT(*) FROM reservations WHERE concert_id = ? AND status = 'CONFIRMED') AS pending, \
                (SELECT COUNT(*) FROM refunds WHERE concert_id = ? AND reason = 'CONCERT_CANCELLED' \
                   AND status = 'FAILED') AS failed",
    )
    .bind(id)
    .bind(id)
    .bind(id)
    .bind(id)
    .fetch_one(conn)
    .traced("SELECT", "refunds")
    .await
}
