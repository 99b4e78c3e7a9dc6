use super::*;

fn small() -> RawPlan {
    example::venue(4, 2, 5)
}

#[test]
fn a_venue_becomes_its_seats_named_positioned_and_ranked_in_plan_order() {
    let plan = SeatingPlan::parse(small(), &example::CATEGORIES).unwrap();
    assert_eq!(plan.seats.len(), 30);
    let first = &plan.seats[0];
    assert_eq!(first.number.as_str(), "Stalls-1-1");
    assert_eq!(
        (
            first.zone.as_str(),
            first.row_label.as_str(),
            first.label.as_str()
        ),
        ("Stalls", "1", "1")
    );
    assert_eq!(first.category, "Premium");
    assert_eq!((first.row_index, first.row_position), (0, 0));
    // Zone, row and seat positions add up.
    assert_eq!(first.x, 15.0);
    assert!(first.y < 120.0, "the curve brings a row's end forward");
    let balcony = plan
        .seats
        .iter()
        .find(|s| s.number.as_str() == "Balcony-2-3")
        .unwrap();
    assert_eq!(
        (
            balcony.row_index,
            balcony.row_position,
            balcony.category.as_str()
        ),
        (5, 2, "Balcony")
    );
    // Front row's centre is the best seat; the balcony's last row's ends the worst.
    let best = plan.seats.iter().min_by_key(|s| s.rank).unwrap();
    assert_eq!(best.number.as_str(), "Stalls-1-3");
    let worst = plan.seats.iter().max_by_key(|s| s.rank).unwrap();
    assert_eq!(worst.number.as_str(), "Balcony-2-5");
    let ranks: HashSet<u32> = plan.seats.iter().map(|s| s.rank).collect();
    assert_eq!(ranks.len(), 30, "every rank once");
}

#[test]
fn one_zone_leaves_the_zone_out_of_the_names() {
    let mut raw = small();
    raw.zones.truncate(1);
    let plan = SeatingPlan::parse(raw, &example::CATEGORIES).unwrap();
    assert_eq!(plan.seats[0].number.as_str(), "1-1");
}

fn refused(raw: RawPlan, categories: &[&str]) -> FieldError {
    SeatingPlan::parse(raw, categories).unwrap_err()
}

#[test]
fn the_first_seat_of_an_unknown_category_is_named() {
    let e = refused(small(), &["Premium", "Stalls"]);
    assert_eq!(e.field, "category");
    assert_eq!(
        e.message,
        "seat \"Balcony-1-1\" (row \"1\", zone \"Balcony\"): category \"Balcony\" is not one of the concert's price categories"
    );
    // What a client needs to say it in its own words.
    let params: Vec<(&str, &str)> = e.params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(
        params,
        [
            ("zone", "Balcony"),
            ("row", "1"),
            ("seat", "1"),
            ("category", "Balcony")
        ]
    );
}

#[test]
fn a_guid_or_a_name_twice_is_refused_naming_the_seat() {
    let mut raw = small();
    raw.zones[1].rows[1].seats[4].seat_guid = "Stalls-2-2".to_owned();
    let e = refused(raw, &example::CATEGORIES);
    assert_eq!(e.field, "seat_guid");
    assert!(
        e.message.starts_with(
            "seat \"Stalls-2-2\" (row \"2\", zone \"Balcony\"): this seat_guid is in the plan twice"
        ),
        "{}",
        e.message
    );

    let mut raw = small();
    raw.zones[0].rows[1].seats[0].seat_number = "2".to_owned();
    let e = refused(raw, &example::CATEGORIES);
    assert_eq!(e.field, "seat_number");
    assert!(
        e.message.ends_with("another seat is named Stalls-2-2 too"),
        "{}",
        e.message
    );
}

#[test]
fn more_than_a_hundred_thousand_seats_or_none_is_refused() {
    let big = example::venue(400, 1, 250);
    assert_eq!(
        big.zones
            .iter()
            .flat_map(|z| &z.rows)
            .map(|r| r.seats.len())
            .sum::<usize>(),
        100_250
    );
    let e = refused(big, &example::CATEGORIES);
    assert_eq!(e.message, "the plan has 100250 seats; at most 100000");
    let mut empty = small();
    empty.zones.clear();
    assert_eq!(
        refused(empty, &example::CATEGORIES).message,
        "the plan has no seats"
    );
}

#[test]
fn pretix_json_is_read_and_unknown_fields_refused() {
    let json = r#"{"name": "Hall", "categories": [{"name": "A", "color": "red"}],
        "size": {"width": 100, "height": 50},
        "zones": [{"name": "Main", "position": {"x": 0, "y": 0}, "areas": [{"width": 10, "height": 5, "position": {"x": 0, "y": 0}, "text": "Stage"}],
                   "rows": [{"row_number": "A", "position": {"x": 10, "y": 20},
                             "seats": [{"seat_guid": "g1", "seat_number": "1", "position": {"x": 1.5, "y": 2}, "category": "A"}]}]}]}"#;
    let raw: RawPlan = serde_json::from_str(json).unwrap();
    let plan = SeatingPlan::parse(raw, &["A"]).unwrap();
    assert_eq!((plan.seats[0].x, plan.seats[0].y), (11.5, 22.0));
    assert_eq!(plan.seats[0].number.as_str(), "A-1");
    let wrong = json.replace("\"seat_number\"", "\"number\"");
    assert!(serde_json::from_str::<RawPlan>(&wrong).is_err());
}

/// `docs/examples/olympic-hall.json`, the plan of `make run`'s example
/// concert and a sample of the format, is the example venue's (set
/// `TICKET_WRITE_EXAMPLES=1` to write it again).
#[test]
fn the_documented_example_is_the_example_venue() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/examples/olympic-hall.json"
    );
    let expected = serde_json::to_string_pretty(&example::venue(12, 6, 24)).unwrap() + "\n";
    if std::env::var_os("TICKET_WRITE_EXAMPLES").is_some() {
        std::fs::write(path, &expected).unwrap();
    }
    let written = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        written == expected,
        "{path} is not example::venue(12, 6, 24): run with TICKET_WRITE_EXAMPLES=1"
    );
    let plan = SeatingPlan::parse(
        serde_json::from_str(&written).unwrap(),
        &example::CATEGORIES,
    )
    .unwrap();
    assert_eq!(plan.seats.len(), 432);
}
