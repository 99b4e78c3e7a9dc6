//! Best available against references written the plain way: every block
//! tried one by one, the fewest blocks counted from the run lengths, and a
//! clerk that takes a mixed line (seats by number, best available, a
//! standing area) one request at a time. Workers holding random parts of
//! the line must end with the clerk's seats exactly.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;

use super::super::*;
use super::*;

fn place(seat: u64, row: u32, position: u32, rank: u32) -> Place {
    Place {
        seat: SeatId(seat),
        row,
        position,
        rank,
    }
}

fn seated(count: u32) -> Shape {
    Shape {
        count,
        adjacent: true,
        allow_split: false,
    }
}

/// One row of `n` seats at positions 0.., ranked centre first.
fn row(n: u32) -> Vec<Place> {
    (0..n)
        .map(|s| place(u64::from(s), 0, s, grid_rank(0, s, n)))
        .collect()
}

fn ids(seats: &[u64]) -> Vec<SeatId> {
    seats.iter().copied().map(SeatId).collect()
}

fn sorted(mut seats: Vec<SeatId>) -> Vec<SeatId> {
    seats.sort_unstable();
    seats
}

#[test]
fn a_grid_ranks_the_front_row_first_and_its_centre_first() {
    let ranks: Vec<u32> = (0..4).map(|s| grid_rank(0, s, 4)).collect();
    assert_eq!(ranks, [2, 0, 1, 3]);
    let ranks: Vec<u32> = (0..5).map(|s| grid_rank(1, s, 5)).collect();
    assert_eq!(ranks, [8, 6, 5, 7, 9], "row B comes after all of row A");
}

#[test]
fn the_best_block_is_the_centre_of_the_front_row() {
    assert_eq!(choose(&row(6), seated(2)).map(sorted), Ok(ids(&[2, 3])));
    assert_eq!(
        choose(&row(6), seated(3)).map(sorted),
        Ok(ids(&[1, 2, 3])),
        "left of centre first when the sums tie"
    );
}

#[test]
fn a_seat_of_another_category_or_taken_breaks_a_block() {
    // Positions 0, 1 | 3, 4: position 2 is another category's.
    let free = [
        place(1, 0, 0, 3),
        place(2, 0, 1, 1),
        place(4, 0, 3, 0),
        place(5, 0, 4, 2),
    ];
    assert_eq!(choose(&free, seated(2)).map(sorted), Ok(ids(&[4, 5])));
    assert_eq!(choose(&free, seated(3)), Err(Refusal::NoAdjacentSeats));
    assert_eq!(choose(&free, seated(5)), Err(Refusal::SoldOut));
    let split = Shape {
        allow_split: true,
        ..seated(3)
    };
    assert_eq!(
        choose(&free, split).map(sorted),
        Ok(ids(&[2, 4, 5])),
        "two blocks: the better pair whole, then the best single seat"
    );
}

#[test]
fn a_standing_area_gives_the_first_entry_numbers_anywhere() {
    let floor: Vec<Place> = (0..5).map(|n| place(10 + n, 0, 0, n as u32)).collect();
    let standing = Shape {
        count: 3,
        adjacent: false,
        allow_split: false,
    };
    assert_eq!(
        choose(&floor[1..], standing).map(sorted),
        Ok(ids(&[11, 12, 13]))
    );
    assert_eq!(choose(&floor[3..], standing), Err(Refusal::SoldOut));
}

/// The best block tried the plain way: from each free place, the `count`
/// positions after it.
fn reference_block(free: &[Place], count: u32) -> Option<Vec<SeatId>> {
    let at: HashMap<(u32, u32), Place> = free.iter().map(|p| ((p.row, p.position), *p)).collect();
    free.iter()
        .filter_map(|start| {
            let block: Option<Vec<Place>> = (0..count)
                .map(|i| at.get(&(start.row, start.position + i)).copied())
                .collect();
            block
        })
        .min_by_key(|block| {
            let sum: u64 = block.iter().map(|p| u64::from(p.rank)).sum();
            (sum, block[0].row, block[0].position)
        })
        .map(|block| sorted(block.iter().map(|p| p.seat).collect()))
}

/// How many blocks the seats make.
fn blocks(free: &[Place], chosen: &[SeatId]) -> usize {
    let mut places: Vec<Place> = free
        .iter()
        .filter(|p| chosen.contains(&p.seat))
        .copied()
        .collect();
    places.sort_by_key(|p| (p.row, p.position));
    places
        .windows(2)
        .filter(|w| w[0].row != w[1].row || w[0].position + 1 != w[1].position)
        .count()
        + usize::from(!places.is_empty())
}

/// The fewest blocks any choice could make: the longest runs first.
fn fewest_possible(free: &[Place], count: u32) -> usize {
    let mut lengths: Vec<usize> = runs_of(free).iter().map(Vec::len).collect();
    lengths.sort_unstable_by(|a, b| b.cmp(a));
    let mut total = 0;
    for (i, length) in lengths.iter().enumerate() {
        total += length;
        if total >= count as usize {
            return i + 1;
        }
    }
    usize::MAX
}

/// Free places of a venue of 3 rows of 8 positions, some missing (taken,
/// or another category's), ranked as a grid.
fn venue() -> impl Strategy<Value = Vec<Place>> {
    proptest::sample::subsequence((0..24u32).collect::<Vec<_>>(), 0..=24).prop_map(|cells| {
        cells
            .into_iter()
            .map(|c| place(u64::from(c), c / 8, c % 8, grid_rank(c / 8, c % 8, 8)))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_block_chosen_is_the_best_side_by_side(free in venue(), count in 1..=5u32) {
        let chosen = choose(&free, seated(count));
        match reference_block(&free, count) {
            Some(block) => prop_assert_eq!(chosen.map(sorted), Ok(block)),
            None if free.len() < count as usize => prop_assert_eq!(chosen, Err(Refusal::SoldOut)),
            None => prop_assert_eq!(chosen, Err(Refusal::NoAdjacentSeats)),
        }
    }

    #[test]
    fn a_split_request_gets_its_count_in_the_fewest_blocks(free in venue(), count in 1..=8u32) {
        let shape = Shape { allow_split: true, ..seated(count) };
        match choose(&free, shape) {
            Ok(chosen) => {
                let distinct: HashSet<SeatId> = chosen.iter().copied().collect();
                prop_assert_eq!(distinct.len(), count as usize, "all of it, each seat once");
                prop_assert!(chosen.iter().all(|s| free.iter().any(|p| p.seat == *s)));
                prop_assert_eq!(blocks(&free, &chosen), fewest_possible(&free, count));
            }
            Err(refusal) => {
                prop_assert_eq!(refusal, Refusal::SoldOut);
                prop_assert!(free.len() < count as usize);
            }
        }
    }

    #[test]
    fn standing_gets_the_best_ranked_places(free in venue(), count in 1..=6u32) {
        let shape = Shape { adjacent: false, ..seated(count) };
        let mut by_rank = free.clone();
        by_rank.sort_by_key(|p| p.rank);
        let expected: Vec<SeatId> = by_rank.iter().take(count as usize).map(|p| p.seat).collect();
        match choose(&free, shape) {
            Ok(chosen) => prop_assert_eq!(sorted(chosen), sorted(expected)),
            Err(refusal) => {
                prop_assert_eq!(refusal, Refusal::SoldOut);
                prop_assert!(free.len() < count as usize);
            }
        }
    }
}

mod sale;
