//! A venue's seating plan in pretix's open format (`seating-plan.schema.json`:
//! `name`, `categories [{name, color}]`, `size`, `zones [{name, position,
//! rows [{row_number, position, seats [{seat_guid, seat_number, position,
//! category}]}], areas}]`), parsed into the seats a concert is sold from.
//! Long because it types and bounds every part of the format, areas and
//! their shapes included, in the one place that parses it.
//!
//! Positions add up as pretix draws them: a seat's is relative to its row's,
//! a row's to its zone's. Each seat is named `zone-row-seat` (the zone
//! left out when the plan has one), which must be a valid seat number and
//! unique in the plan.
//!
//! The plan's order is its order of preference: zones as listed (the
//! first is nearest the stage), rows as listed in each zone (front first),
//! and in a row the centre first, as for rows × seatsPerRow. Best available
//! follows that rank (see `allocation::best`).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::allocation::best::grid_rank;
use super::{FieldError, SeatNumber};

/// At most this many seats in a plan (as in a concert made of rows).
pub const MAX_SEATS: usize = 100_000;

/// The plan as pretix writes it (what `GET` gives back).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPlan {
    pub name: String,
    pub categories: Vec<RawCategory>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Size>,
    pub zones: Vec<RawZone>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCategory {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Size {
    pub width: f64,
    pub height: f64,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Position {
    pub x: f64,
    pub y: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawZone {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub displayed: Option<bool>,
    pub position: Position,
    pub rows: Vec<RawRow>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub areas: Vec<RawArea>,
}

/// A drawn area of a zone (the stage, a bar, a floor): pretix's schema
/// (`width`, `height`, `position`, `color`, `border_color`, `rotation`,
/// `text`) and its editor's shapes (`shape` with `rectangle`, `circle`,
/// `ellipse` or `polygon`, a `text` object, a `uuid`). Typed, so that
/// parsing a plan takes memory in proportion to its text (any JSON here
/// made a tree of ~25 times the body: 33 MB of numbers took the API to
/// 813 MB).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawArea {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub border_color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotation: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<AreaText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rectangle: Option<AreaSize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circle: Option<AreaCircle>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ellipse: Option<AreaEllipse>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polygon: Option<AreaPolygon>,
}

/// An area's label: a string (the schema) or the editor's object.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AreaText {
    Plain(String),
    Styled(StyledText),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StyledText {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<f64>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AreaSize {
    pub width: f64,
    pub height: f64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AreaCircle {
    pub radius: f64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AreaEllipse {
    pub radius: Position,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AreaPolygon {
    pub points: Vec<Position>,
}

/// At most this many areas in a plan, and points in all its polygons.
pub const MAX_AREAS: usize = 1_000;
pub const MAX_POLYGON_POINTS: usize = 10_000;
/// How long an area's words (its name, colours, label) may be.
const MAX_AREA_TEXT_CHARS: usize = 200;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRow {
    pub row_number: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Position>,
    pub seats: Vec<RawSeat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number_of_seats: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seats_spacing: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSeat {
    pub seat_guid: String,
    pub seat_number: String,
    pub position: Position,
    pub category: String,
}

/// One seat of a plan, ready to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanSeat {
    pub number: SeatNumber,
    pub guid: String,
    pub zone: String,
    pub row_label: String,
    /// The seat's own label in its row (`seat_number` in the plan).
    pub label: String,
    /// The plan category's name (the concert's price category of that name).
    pub category: String,
    pub x: f64,
    pub y: f64,
    /// Rows counted through every zone, in plan order.
    pub row_index: u32,
    pub row_position: u32,
    pub rank: u32,
}

/// A plan whose every seat is valid and named once.
#[derive(Debug, Clone)]
pub struct SeatingPlan {
    pub raw: RawPlan,
    pub seats: Vec<PlanSeat>,
}

/// How long the labels kept of a plan may be (the columns' widths).
const MAX_NAME_CHARS: usize = 200;
const MAX_ZONE_CHARS: usize = 64;
const MAX_ROW_CHARS: usize = 32;
const MAX_GUID_CHARS: usize = 64;

impl SeatingPlan {
    /// Checks `raw` against the concert's price categories (`categories`,
    /// by name): the first seat whose category is not one of them, a
    /// `seat_guid` or a seat name twice, or more than [`MAX_SEATS`] seats
    /// is refused, naming the seat.
    pub fn parse(raw: RawPlan, categories: &[&str]) -> Result<Self, FieldError> {
        let count: usize = raw
            .zones
            .iter()
            .flat_map(|z| &z.rows)
            .map(|r| r.seats.len())
            .sum();
        if count == 0 {
            return Err(FieldError::new("zones", "the plan has no seats")
                .with("count", "0")
                .with("limit", MAX_SEATS.to_string()));
        }
        if count > MAX_SEATS {
            return Err(FieldError::new(
                "zones",
                format!("the plan has {count} seats; at most {MAX_SEATS}"),
            )
            .with("count", count.to_string())
            .with("limit", MAX_SEATS.to_string()));
        }
        check_length("name", &raw.name, MAX_NAME_CHARS)?;
        if raw.categories.len() > MAX_AREAS {
            return Err(FieldError::new(
                "categories",
                format!(
                    "the plan has {} categories; at most {MAX_AREAS}",
                    raw.categories.len()
                ),
            ));
        }
        for category in &raw.categories {
            for words in std::iter::once(&category.name).chain(&category.color) {
                check_length("categories", words, MAX_AREA_TEXT_CHARS)?;
            }
        }
        check_areas(&raw)?;
        let many_zones = raw.zones.len() > 1;
        let mut guids: HashSet<&str> = HashSet::with_capacity(count);
        let mut names: HashSet<String> = HashSet::with_capacity(count);
        let mut seats = Vec::with_capacity(count);
        let mut row_index: u32 = 0;
        for zone in &raw.zones {
            check_length("zones.name", &zone.name, MAX_ZONE_CHARS)?;
            for row in &zone.rows {
                check_length("rows.row_number", &row.row_number, MAX_ROW_CHARS)?;
                let origin = row.position.unwrap_or_default();
                for (i, seat) in row.seats.iter().enumerate() {
                    let position = u32::try_from(i).unwrap_or(u32::MAX);
                    // The seat as the venue names it, for a client's own words.
                    let refused = |field: &'static str, reason: String| {
                        let which = format!(
                            "seat {:?} (row {:?}{})",
                            seat.seat_guid,
                            row.row_number,
                            if zone.name.is_empty() {
                                String::new()
                            } else {
                                format!(", zone {:?}", zone.name)
                            }
                        );
                        FieldError::new(field, format!("{which}: {reason}"))
                            .with("zone", zone.name.clone())
                            .with("row", row.row_number.clone())
                            .with("seat", seat.seat_number.clone())
                    };
                    if !categories.contains(&seat.category.as_str()) {
                        return Err(refused(
                            "category",
                            format!(
                                "category {:?} is not one of the concert's price categories",
                                seat.category
                            ),
                        )
                        .with("category", seat.category.clone()));
                    }
                    if seat.seat_guid.trim().is_empty()
                        || seat.seat_guid.chars().count() > MAX_GUID_CHARS
                    {
                        return Err(refused(
                            "seat_guid",
                            format!("a seat_guid has 1 to {MAX_GUID_CHARS} characters"),
                        ));
                    }
                    if !guids.insert(&seat.seat_guid) {
                        return Err(refused(
                            "seat_guid",
                            "this seat_guid is in the plan twice".to_owned(),
                        ));
                    }
                    check_length("seat_number", &seat.seat_number, MAX_ROW_CHARS)?;
                    let number = name_of(
                        many_zones.then_some(&zone.name),
                        &row.row_number,
                        &seat.seat_number,
                    )
                    .map_err(|e| refused("seat_number", e.message))?;
                    if !names.insert(number.as_str().to_owned()) {
                        return Err(refused(
                            "seat_number",
                            format!("another seat is named {} too", number.as_str()),
                        ));
                    }
                    // Each part may be finite and their sum not (1e308 + 1e308).
                    let x = zone.position.x + origin.x + seat.position.x;
                    let y = zone.position.y + origin.y + seat.position.y;
                    if !x.is_finite() || !y.is_finite() {
                        return Err(refused(
                            "position",
                            "its position is beyond what a plan can draw".to_owned(),
                        ));
                    }
                    seats.push(PlanSeat {
                        number,
                        guid: seat.seat_guid.clone(),
                        zone: zone.name.clone(),
                        row_label: row.row_number.clone(),
                        label: seat.seat_number.clone(),
                        category: seat.category.clone(),
                        x,
                        y,
                        row_index,
                        row_position: position,
                        rank: 0,
                    });
                }
                row_index = row_index.saturating_add(1);
            }
        }
        rank(&mut seats);
        Ok(Self { raw, seats })
    }
}

/// Ranks in plan order: row by row, and in a row the centre first.
fn rank(seats: &mut [PlanSeat]) {
    let mut start = 0;
    let mut rank_base: u32 = 0;
    while start < seats.len() {
        let row = seats[start].row_index;
        let end = seats[start..]
            .iter()
            .position(|s| s.row_index != row)
            .map_or(seats.len(), |n| start + n);
        let width = u32::try_from(end - start).unwrap_or(u32::MAX);
        for seat in &mut seats[start..end] {
            seat.rank = rank_base + grid_rank(0, seat.row_position, width);
        }
        rank_base = rank_base.saturating_add(width);
        start = end;
    }
}

/// `zone-row-seat` with only letters and digits of each part.
fn name_of(zone: Option<&String>, row: &str, seat: &str) -> Result<SeatNumber, FieldError> {
    let clean = |s: &str| -> String { s.chars().filter(|c| c.is_alphanumeric()).collect() };
    let mut parts: Vec<String> = Vec::new();
    if let Some(zone) = zone {
        parts.push(clean(zone));
    }
    parts.push(clean(row));
    parts.push(clean(seat));
    parts.retain(|p| !p.is_empty());
    SeatNumber::parse(&parts.join("-"))
}

/// The plan's areas within their bounds: how many, how many points, how
/// long their words.
fn check_areas(raw: &RawPlan) -> Result<(), FieldError> {
    let areas = || raw.zones.iter().flat_map(|z| &z.areas);
    let count = areas().count();
    if count > MAX_AREAS {
        return Err(FieldError::new(
            "areas",
            format!("the plan has {count} areas; at most {MAX_AREAS}"),
        ));
    }
    let points: usize = areas()
        .filter_map(|a| a.polygon.as_ref())
        .map(|p| p.points.len())
        .sum();
    if points > MAX_POLYGON_POINTS {
        return Err(FieldError::new(
            "areas",
            format!("the plan's polygons have {points} points; at most {MAX_POLYGON_POINTS}"),
        ));
    }
    for area in areas() {
        let label = match &area.text {
            Some(AreaText::Plain(text)) => Some(text),
            Some(AreaText::Styled(styled)) => styled.text.as_ref(),
            None => None,
        };
        let styled_colour = match &area.text {
            Some(AreaText::Styled(styled)) => styled.color.as_ref(),
            _ => None,
        };
        for words in [&area.uuid, &area.shape, &area.color, &area.border_color]
            .into_iter()
            .flatten()
            .chain(label)
            .chain(styled_colour)
        {
            check_length("areas", words, MAX_AREA_TEXT_CHARS)?;
        }
    }
    Ok(())
}

fn check_length(field: &'static str, value: &str, max: usize) -> Result<(), FieldError> {
    if value.chars().count() > max {
        return Err(
            FieldError::new(field, format!("{value:?} is longer than {max} characters"))
                .with("limit", max.to_string()),
        );
    }
    Ok(())
}

pub mod example;

#[cfg(test)]
mod tests;
