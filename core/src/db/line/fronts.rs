//! A concert's line front, as the line watch reads it every tick: what
//! entered each part, the lowest request still open in each, and those
//! decided out of turn beyond it.

use std::collections::HashMap;

use sqlx::{AssertSqlSafe, MySqlConnection};

use super::{LotteryCount, lottery_place};
use crate::db::{BindIds as _, IdList, Traced as _};
use crate::domain::line_position::{DECIDED_BEYOND_READ, PartFront};
use crate::domain::{ConcertId, LineFront, LineKey, LinePart, LineRank, QueueId};

/// A concert's line as last read: its front, and whether its lottery has
/// been counted (its requests can be placed, see [`lottery_place`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineState {
    pub front: LineFront,
    /// The lottery's bucket bits once the opening has counted it.
    pub lottery: Option<LotteryCount>,
    /// The sale has opened, by the database's clock.
    pub opened: bool,
}

impl LineState {
    /// An opened lottery that nobody has counted yet.
    pub fn lottery_to_count(&self) -> bool {
        self.opened && self.lottery.is_none() && self.front.part(LinePart::Lottery).entered > 0
    }
}

/// Each concert's line: what entered each part, and the lowest request
/// still open in each (a few index dives per concert), with those decided
/// out of turn beyond it (a bounded read; none while decisions go in line
/// order). A concert that never had a request has an empty line.
pub async fn fronts(
    conn: &mut MySqlConnection,
    concerts: &[ConcertId],
) -> Result<HashMap<ConcertId, LineState>, sqlx::Error> {
    let mut lines: HashMap<ConcertId, LineState> = concerts
        .iter()
        .map(|c| (*c, LineState::default()))
        .collect();
    async {
        let Some(list) = IdList::of(concerts) else {
            return Ok::<(), sqlx::Error>(());
        };
        let lowest: Vec<String> = LOWEST
            .iter()
            .map(|(part, status)| {
                format!(
                    "(SELECT q.id FROM reservation_queue q FORCE INDEX (idx_queue_concert_line) \
                      WHERE q.concert_id = s.concert_id AND q.status = '{status}' AND {} \
                      ORDER BY q.line_key, q.id LIMIT 1)",
                    key_range(*part, "q.")
                )
            })
            .collect();
        let rows: Vec<FrontRow> = sqlx::query_as(AssertSqlSafe(format!(
            "SELECT s.concert_id, s.presale_entered, s.lottery_entered, s.after_entered, \
                    s.lottery_counted, s.lottery_bucket_bits, \
                    (c.opens_at IS NULL OR c.opens_at <= UTC_TIMESTAMP(6)), {} \
             FROM sale_lines s JOIN concerts c ON c.id = s.concert_id WHERE s.concert_id IN ({list})",
            lowest.join(", ")
        )))
        .bind_ids(&list)
        .fetch_all(&mut *conn)
        .await?;
        let ids: Vec<QueueId> = rows.iter().flat_map(|row| row.lowest).flatten().collect();
        let found: HashMap<QueueId, (LineKey, Option<LineRank>)> = match IdList::of(&ids) {
            None => HashMap::new(),
            Some(ids) => {
                let found: Vec<(QueueId, LineKey, Option<LineRank>)> =
                    sqlx::query_as(AssertSqlSafe(format!(
                        "SELECT id, line_key, line_rank FROM reservation_queue WHERE id IN ({ids})"
                    )))
                    .bind_ids(&ids)
                    .fetch_all(&mut *conn)
                    .await?;
                found
                    .into_iter()
                    .map(|(id, key, rank)| (id, (key, rank)))
                    .collect()
            }
        };
        // Each part's lowest open request, and what was decided beyond it:
        // read for every line together, a few statements per tick however
        // many concerts are watched.
        let found = &found;
        let lowest: Vec<(usize, LinePart, LineKey, QueueId, Option<LineRank>)> = rows
            .iter()
            .enumerate()
            .flat_map(|(i, row)| {
                LinePart::ALL
                    .into_iter()
                    .filter_map(move |part| row.lowest(part, found).map(|(k, id, r)| (i, part, k, id, r)))
            })
            .collect();
        let wanted: Vec<Beyond> = lowest
            .iter()
            .map(|&(i, part, key, id, _)| Beyond {
                concert: rows[i].concert_id,
                part,
                key,
                id,
            })
            .collect();
        let mut beyond = decided_beyond(conn, &wanted).await?;
        let mut states: Vec<LineState> = rows.iter().map(FrontRow::state).collect();
        for (n, &(i, part, key, id, rank)) in lowest.iter().enumerate() {
            let row = &rows[i];
            let lowest_open = match part {
                LinePart::Lottery => match states[i].lottery {
                    Some(count) => lottery_place(conn, row.concert_id, count, key, id).await?,
                    None => None,
                },
                _ => rank.map(LineRank::place),
            };
            let front = states[i].front.part_mut(part);
            front.lowest_open = lowest_open;
            front.decided_beyond = std::mem::take(&mut beyond[n]);
        }
        for (row, state) in rows.iter().zip(states) {
            lines.insert(row.concert_id, state);
        }
        Ok(())
    }
    .traced("SELECT", "sale_lines")
    .await?;
    Ok(lines)
}

/// The lowest open request looked for in each part, by status.
const LOWEST: [(LinePart, &str); 7] = [
    (LinePart::Presale, "PENDING"),
    (LinePart::Presale, "PROCESSING"),
    (LinePart::Lottery, "WAITING"),
    (LinePart::Lottery, "PENDING"),
    (LinePart::Lottery, "PROCESSING"),
    (LinePart::AfterOpening, "PENDING"),
    (LinePart::AfterOpening, "PROCESSING"),
];

/// The keys of a part's requests, on `alias`'s rows.
pub(super) fn key_range(part: LinePart, alias: &str) -> String {
    let after = LineKey::AFTER_OPENING.get();
    match part {
        LinePart::Presale => format!("{alias}line_key = 0"),
        LinePart::Lottery => format!("{alias}line_key > 0 AND {alias}line_key < {after}"),
        LinePart::AfterOpening => format!("{alias}line_key = {after}"),
    }
}

struct FrontRow {
    concert_id: ConcertId,
    presale_entered: u64,
    lottery_entered: u64,
    after_entered: u64,
    lottery_counted: Option<u64>,
    lottery_bucket_bits: u8,
    opened: bool,
    /// The ids of [`LOWEST`], in its order.
    lowest: [Option<QueueId>; 7],
}

impl<'r> sqlx::FromRow<'r, sqlx::mysql::MySqlRow> for FrontRow {
    fn from_row(row: &'r sqlx::mysql::MySqlRow) -> Result<Self, sqlx::Error> {
        use sqlx::Row as _;
        let mut lowest = [None; 7];
        for (i, id) in lowest.iter_mut().enumerate() {
            *id = row.try_get(7 + i)?;
        }
        Ok(Self {
            concert_id: row.try_get(0)?,
            presale_entered: row.try_get(1)?,
            lottery_entered: row.try_get(2)?,
            after_entered: row.try_get(3)?,
            lottery_counted: row.try_get(4)?,
            lottery_bucket_bits: row.try_get(5)?,
            opened: row.try_get(6)?,
            lowest,
        })
    }
}

impl FrontRow {
    /// The line with what entered and was placed in each part; the lowest
    /// open places and what was decided beyond them come after.
    fn state(&self) -> LineState {
        let lottery = self.lottery_counted.map(|requests| LotteryCount {
            requests,
            bucket_bits: self.lottery_bucket_bits,
        });
        let mut state = LineState {
            front: LineFront::default(),
            lottery,
            opened: self.opened,
        };
        for part in LinePart::ALL {
            let (entered, placed) = match part {
                LinePart::Presale => (self.presale_entered, self.presale_entered),
                LinePart::Lottery => {
                    let counted = lottery.map_or(0, |l| l.requests);
                    (self.lottery_entered.max(counted), counted)
                }
                LinePart::AfterOpening => (self.after_entered, self.after_entered),
            };
            *state.front.part_mut(part) = PartFront {
                entered,
                placed,
                lowest_open: None,
                decided_beyond: Vec::new(),
            };
        }
        state
    }

    /// The part's lowest open request, by (key, id), with its rank.
    fn lowest(
        &self,
        part: LinePart,
        found: &HashMap<QueueId, (LineKey, Option<LineRank>)>,
    ) -> Option<(LineKey, QueueId, Option<LineRank>)> {
        LOWEST
            .iter()
            .zip(&self.lowest)
            .filter(|((p, _), _)| *p == part)
            .filter_map(|(_, id)| id.and_then(|id| found.get(&id).map(|f| (f.0, id, f.1))))
            .min_by_key(|(key, id, _)| (*key, *id))
    }
}

/// A part's lowest open request, beyond which decisions are looked for.
struct Beyond {
    concert: ConcertId,
    part: LinePart,
    key: LineKey,
    id: QueueId,
}

/// Parts whose decisions beyond their lowest open request are read in one
/// statement.
const BEYOND_CHUNK: usize = 32;

/// For each of `wanted`, the requests of its part beyond its lowest open
/// one already decided, in the part's order: their places, or for the
/// lottery their keys (a bounded read each, [`BEYOND_CHUNK`] parts a
/// statement).
async fn decided_beyond(
    conn: &mut MySqlConnection,
    wanted: &[Beyond],
) -> Result<Vec<Vec<u64>>, sqlx::Error> {
    let mut found: Vec<Vec<u64>> = vec![Vec::new(); wanted.len()];
    for (chunk_at, chunk) in wanted.chunks(BEYOND_CHUNK).enumerate() {
        let mut selects = Vec::with_capacity(chunk.len() * 2);
        for (n, b) in chunk.iter().enumerate() {
            let (value, beyond) = if b.part == LinePart::Lottery {
                (
                    "line_key",
                    format!(
                        "(line_key > ? OR (line_key = ? AND id > ?)) AND line_key < {}",
                        LineKey::AFTER_OPENING.get()
                    ),
                )
            } else {
                ("line_rank", "line_key = ? AND id > ?".to_owned())
            };
            for status in ["SUCCESS", "FAILED"] {
                selects.push(format!(
                    "(SELECT CAST({n} AS UNSIGNED) AS k, {value} AS v FROM reservation_queue FORCE INDEX (idx_queue_concert_line) \
                      WHERE concert_id = ? AND status = '{status}' AND {beyond} \
                      ORDER BY line_key, id LIMIT {DECIDED_BEYOND_READ})"
                ));
            }
        }
        let statement = selects.join(" UNION ALL ");
        let mut query = sqlx::query_as(AssertSqlSafe(statement));
        for b in chunk {
            for _ in 0..2 {
                query = query.bind(b.concert).bind(b.key);
                if b.part == LinePart::Lottery {
                    query = query.bind(b.key);
                }
                query = query.bind(b.id);
            }
        }
        let rows: Vec<(u64, Option<u64>)> = query.fetch_all(&mut *conn).await?;
        for (n, v) in rows {
            let Some(v) = v else { continue };
            let at = chunk_at * BEYOND_CHUNK + n as usize;
            if let Some(b) = wanted.get(at) {
                found[at].push(match b.part {
                    LinePart::Lottery => v,
                    part => v.saturating_sub(part.base()),
                });
            }
        }
    }
    for beyond in &mut found {
        beyond.sort_unstable();
    }
    Ok(found)
}
