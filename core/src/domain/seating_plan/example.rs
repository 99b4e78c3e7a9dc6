//! A real-looking venue in pretix's format, for the tests, the benchmarks
//! and `make run`'s example concert: a curved stalls block (the front rows
//! "Premium", the rest "Stalls") and a balcony behind it ("Balcony"), with
//! the stage drawn as an area.

use super::{Position, RawCategory, RawPlan, RawRow, RawSeat, RawZone, Size};

/// The price categories the example's seats name, best first.
pub const CATEGORIES: [&str; 3] = ["Premium", "Stalls", "Balcony"];

/// Seat pitch and row pitch, in the plan's pixels.
const PITCH: f64 = 30.0;

/// `stalls` rows and `balcony` rows of `width` seats (the first three stalls
/// rows Premium): `(stalls + balcony) × width` seats.
pub fn venue(stalls: u32, balcony: u32, width: u32) -> RawPlan {
    let span = f64::from(width) * PITCH;
    let zone =
        |name: &str, y: f64, rows: u32, first_row: u32, category: &dyn Fn(u32) -> &'static str| {
            RawZone {
                name: name.to_owned(),
                displayed: Some(true),
                position: Position { x: 0.0, y },
                rows: (0..rows)
                    .map(|r| {
                        let row = first_row + r;
                        RawRow {
                            row_number: row.to_string(),
                            position: Some(Position {
                                x: 0.0,
                                y: f64::from(r) * PITCH,
                            }),
                            seats: (0..width)
                                .map(|s| {
                                    // A gentle curve: the row's ends come forward.
                                    let from_centre = f64::from(s) - f64::from(width - 1) / 2.0;
                                    RawSeat {
                                        seat_guid: format!("{name}-{row}-{}", s + 1),
                                        seat_number: (s + 1).to_string(),
                                        position: Position {
                                            x: f64::from(s) * PITCH + PITCH / 2.0,
                                            y: -(from_centre * from_centre) / (span / 2.0),
                                        },
                                        category: category(r).to_owned(),
                                    }
                                })
                                .collect(),
                            number_of_seats: None,
                            seats_spacing: None,
                        }
                    })
                    .collect(),
                areas: Vec::new(),
            }
        };
    let stalls_y = 120.0;
    let balcony_y = stalls_y + f64::from(stalls) * PITCH + 90.0;
    RawPlan {
        name: "Olympic Hall".to_owned(),
        categories: [
            ("Premium", "#7b2d8b"),
            ("Stalls", "#1f6fb2"),
            ("Balcony", "#2e8540"),
        ]
        .iter()
        .map(|(name, color)| RawCategory {
            name: (*name).to_owned(),
            color: Some((*color).to_owned()),
        })
        .collect(),
        size: Some(Size {
            width: span,
            height: balcony_y + f64::from(balcony) * PITCH + 30.0,
        }),
        zones: vec![
            zone("Stalls", stalls_y, stalls, 1, &|r| {
                if r < 3 { "Premium" } else { "Stalls" }
            }),
            zone("Balcony", balcony_y, balcony, 1, &|_| "Balcony"),
        ],
    }
}
