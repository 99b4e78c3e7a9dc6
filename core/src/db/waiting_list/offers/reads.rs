//! What an offering step reads before it locks seats: the free places of
//! the pools the list's fans wait for (a plain read), and the fans who could
//! take some of them (locked, in order).

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, MySqlConnection};

use super::super::{FREE_AND_UNWANTED, bind_some, serving, waiting_for};
use super::{Buyers, ENTRIES_PER_PAGE, SEATS_PER_STEP};
use crate::db::{BindIds as _, IdList, access_codes, fans};
use crate::domain::allocation::Fan;
use crate::domain::waiting_list::{FreePlace, Waiting, offers};
use crate::domain::{AskedPool, ConcertId, SeatId, UserId};

/// A free seat or place an offer may give, as first read (no lock).
#[derive(Debug, Clone, Copy, sqlx::FromRow)]
pub(super) struct Candidate {
    pub(super) id: SeatId,
    seat_rank: u32,
    category: Option<u8>,
    area: Option<u8>,
}

impl Candidate {
    pub(super) fn place(&self) -> FreePlace {
        FreePlace {
            category: self.category,
            area: self.area,
        }
    }
}

/// The seats and places free and unwanted on `concert` that its waiting
/// fans wait for, best first (rank, then id): read apart for each pool
/// somebody waits for, up to [`SEATS_PER_STEP`] each, so that a pool's
/// seats are found however many free seats of other pools rank before.
pub(super) async fn free_for_list(
    conn: &mut MySqlConnection,
    concert: ConcertId,
) -> Result<Vec<Candidate>, sqlx::Error> {
    let pools: Vec<(Option<u16>,)> = sqlx::query_as(
        "SELECT DISTINCT pool FROM waiting_list_entries FORCE INDEX (idx_waiting_list_pools) \
          WHERE status = 'WAITING' AND concert_id = ?",
    )
    .bind(concert)
    .fetch_all(&mut *conn)
    .await?;
    let mut free: Vec<Candidate> = Vec::new();
    for (pool,) in pools {
        let (serves, position) = serving(waiting_for(pool));
        let read = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT s.id, s.seat_rank, s.category, s.area FROM seats s \
              WHERE s.concert_id = ? AND {serves} AND {FREE_AND_UNWANTED} \
              ORDER BY s.seat_rank, s.id LIMIT ?"
        )))
        .bind(concert);
        let read: Vec<Candidate> = bind_some(read, position)
            .bind(SEATS_PER_STEP)
            .fetch_all(&mut *conn)
            .await?;
        free.extend(read);
    }
    // Any seat and a category's seats overlap.
    free.sort_unstable_by_key(|c| (c.seat_rank, c.id));
    free.dedup_by_key(|c| c.id);
    Ok(free)
}

/// The fans waiting on `concert`'s list, in order, who could take some of
/// the `free` places now (what they wait for is among them, their count
/// fits, their cap has room, in the presale their code too), locked, page
/// after page until those found would take every free place or the list
/// ends.
pub(super) async fn fans_who_fit(
    conn: &mut MySqlConnection,
    concert: ConcertId,
    buyers: &Buyers,
    cap: u64,
    free: &[FreePlace],
    now: DateTime<Utc>,
) -> Result<Vec<Waiting>, sqlx::Error> {
    let most = u8::try_from(free.len()).unwrap_or(u8::MAX);
    // Only the entries of the pools the free places serve are read (u16::MAX
    // stands for none: no pool has that code).
    let any_seat = free.iter().any(|p| p.serves(None));
    let mut served: Vec<u16> = free
        .iter()
        .map(|p| match p.area {
            Some(area) => AskedPool::Area(area).code(),
            None => p
                .category
                .map_or(u16::MAX, |c| AskedPool::Category(c).code()),
        })
        .collect();
    served.sort_unstable();
    served.dedup();
    let Some(served) = IdList::of(&served) else {
        return Ok(Vec::new());
    };
    let mut fitting: Vec<Waiting> = Vec::new();
    let mut after = 0u64;
    loop {
        let page: Vec<(u64, UserId, u8, Option<u16>)> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT id, user_id, seats, pool FROM waiting_list_entries FORCE INDEX (idx_waiting_list_order) \
              WHERE status = 'WAITING' AND concert_id = ? AND id > ? AND seats <= ? \
                AND (pool IN ({served}) OR (pool IS NULL AND ?)) \
              ORDER BY id LIMIT ? FOR UPDATE"
        )))
        .bind(concert)
        .bind(after)
        .bind(most)
        .bind_ids(&served)
        .bind(any_seat)
        .bind(ENTRIES_PER_PAGE)
        .fetch_all(&mut *conn)
        .await?;
        let Some(&(last, _, _, _)) = page.last() else {
            return Ok(fitting);
        };
        after = last;
        let users: Vec<UserId> = page.iter().map(|w| w.1).collect();
        let taken = fans::seats_of(conn, &users).await?;
        let codes = match buyers {
            Buyers::CodeHolders => {
                Some(access_codes::seats_left_for(conn, concert, &users, now).await?)
            }
            _ => None,
        };
        for &(entry, fan, seats, pool) in &page {
            let held = taken.get(&Fan { concert, user: fan }).copied().unwrap_or(0);
            let mut room = cap.saturating_sub(held);
            if let Some(codes) = &codes {
                room = room.min(codes.get(&fan).copied().unwrap_or(0));
            }
            if u64::from(seats) <= room {
                fitting.push(Waiting {
                    entry,
                    fan,
                    seats,
                    wants: waiting_for(pool),
                    room,
                });
            }
        }
        let given: usize = offers(&fitting, free).iter().map(|o| o.places.len()).sum();
        if given >= free.len() || page.len() < ENTRIES_PER_PAGE as usize {
            return Ok(fitting);
        }
    }
}
