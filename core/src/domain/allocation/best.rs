//! Best available: which of a pool's free places a request of `count`
//! gets. A pool is a concert's seats of one price category (side by side)
//! or a standing area (any places).
//!
//! **Best** is the plan's order of preference: each place has a rank (the
//! smaller, the better; for rows × seatsPerRow, front row first and, in a
//! row, centre first). A block's rank is the sum of its places' ranks; of
//! two blocks, the one with the smaller sum is better, and of two with the
//! same sum, the one that starts earlier in the plan (row, then position).
//!
//! **Side by side** means neighbours in the row's seat order: a row's
//! seats carry consecutive positions across every category, so a seat of
//! another category (or a gap in the plan) between two seats breaks their
//! block, and so does a seat that is not free.

use super::SeatId;

/// A free place of a pool, where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub seat: SeatId,
    /// Its row, unique in the concert (standing places: any).
    pub row: u32,
    /// Its position in the row's seat order, counted over every seat of
    /// the row whatever its category.
    pub position: u32,
    /// The plan's order of preference: smaller is better.
    pub rank: u32,
}

/// Why no place was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Fewer free places than asked for.
    SoldOut,
    /// Enough places, but no `count` of them side by side.
    NoAdjacentSeats,
}

/// How a request wants its places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub count: u32,
    /// Side by side (seats of a category) or anywhere (a standing area).
    pub adjacent: bool,
    /// When no block of `count` is free: the best places in the fewest
    /// blocks instead of none.
    pub allow_split: bool,
}

/// The places `shape` gets of `free` (in any order): the best block, or
/// with `allow_split` the fewest blocks; for a standing area, the best
/// `count` places. All or nothing.
pub fn choose(free: &[Place], shape: Shape) -> Result<Vec<SeatId>, Refusal> {
    let count = shape.count as usize;
    if count == 0 || free.len() < count {
        return Err(Refusal::SoldOut);
    }
    if !shape.adjacent {
        let mut best: Vec<Place> = free.to_vec();
        best.sort_by_key(rank_order);
        return first_ranked(best.into_iter(), shape.count);
    }
    let runs = runs_of(free);
    if let Some(block) = best_window(&runs, count) {
        return Ok(block.iter().map(|p| p.seat).collect());
    }
    if shape.allow_split {
        return Ok(fewest_blocks(runs, count));
    }
    Err(Refusal::NoAdjacentSeats)
}

/// The order of best: rank, then where in the plan.
pub(super) fn rank_order(p: &Place) -> (u32, u32, u32, SeatId) {
    (p.rank, p.row, p.position, p.seat)
}

/// The plan's order: row, then position.
pub(super) fn plan_order(p: &Place) -> (u32, u32, SeatId) {
    (p.row, p.position, p.seat)
}

/// The first `count` of places in [`rank_order`], all or nothing: a
/// standing area's best.
pub(super) fn first_ranked(
    ranked: impl Iterator<Item = Place>,
    count: u32,
) -> Result<Vec<SeatId>, Refusal> {
    let chosen: Vec<SeatId> = ranked.take(count as usize).map(|p| p.seat).collect();
    if count == 0 || chosen.len() < count as usize {
        return Err(Refusal::SoldOut);
    }
    Ok(chosen)
}

/// The free places cut into runs of neighbours, in plan order.
fn runs_of(free: &[Place]) -> Vec<Vec<Place>> {
    let mut sorted = free.to_vec();
    // Often sorted already (a pool's places are kept in this order).
    sorted.sort_by_key(plan_order);
    let mut runs: Vec<Vec<Place>> = Vec::new();
    for place in sorted {
        match runs.last_mut() {
            Some(run)
                if run.last().is_some_and(|last| {
                    last.row == place.row && last.position.checked_add(1) == Some(place.position)
                }) =>
            {
                run.push(place)
            }
            _ => runs.push(vec![place]),
        }
    }
    runs
}

/// A block's order: its rank sum, then where it starts.
fn key_of(block: &[Place]) -> (u64, u32, u32) {
    let sum = block.iter().map(|p| u64::from(p.rank)).sum();
    let first = block.first().map_or((0, 0), |p| (p.row, p.position));
    (sum, first.0, first.1)
}

/// The best `count` neighbours of any run.
fn best_window(runs: &[Vec<Place>], count: usize) -> Option<&[Place]> {
    runs.iter()
        .filter(|run| run.len() >= count)
        .flat_map(|run| run.windows(count))
        .min_by_key(|block| key_of(block))
}

/// The fewest blocks that make `count`: while no run can finish the
/// request, the longest run (the better of equals) whole; then the best
/// window of what is left. Taking the longest runs first needs the fewest
/// blocks: `m` blocks suffice exactly when the `m` longest runs do.
fn fewest_blocks(mut runs: Vec<Vec<Place>>, count: usize) -> Vec<SeatId> {
    let mut chosen = Vec::with_capacity(count);
    let mut left = count;
    while left > 0 {
        if let Some(block) = best_window(&runs, left) {
            chosen.extend(block.iter().map(|p| p.seat));
            break;
        }
        let Some(longest) = runs
            .iter()
            .enumerate()
            .min_by_key(|(_, run)| (std::cmp::Reverse(run.len()), key_of(run)))
            .map(|(i, _)| i)
        else {
            break;
        };
        let run = runs.swap_remove(longest);
        left -= run.len();
        chosen.extend(run.iter().map(|p| p.seat));
    }
    chosen
}

/// The ranks of rows × seatsPerRow: front row first and, in a row, the
/// centre first (the seat left of centre before the one right of it). Seat
/// `s` (0-based) of row `r` (0-based, front first).
pub fn grid_rank(row: u32, seat: u32, seats_per_row: u32) -> u32 {
    // Twice the distance from the centre, in whole steps: for 4 seats the
    // centre is 1.5, so seats 1 and 2 come first, then 0 and 3.
    let twice = (2 * seat + 1).abs_diff(seats_per_row);
    let order_in_row = twice - u32::from(2 * seat + 1 < seats_per_row);
    row * seats_per_row + order_in_row
}

#[cfg(test)]
mod tests;
