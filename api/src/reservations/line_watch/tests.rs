use super::*;

#[test]
fn the_hint_grows_with_the_wait() {
    let front = Place::new(1, Some(1_000.0));
    assert_eq!(front.estimated_wait_ms, Some(1));
    assert_eq!(front.poll_after_ms, 1_000);
    let back = Place::new(100_000, Some(1_000.0));
    assert_eq!(back.estimated_wait_ms, Some(100_000));
    assert_eq!(back.poll_after_ms, 10_000);
    let middle = Place::new(20_000, Some(1_000.0));
    assert_eq!(middle.poll_after_ms, 5_000);
    let unmeasured = Place::new(600, None);
    assert_eq!(unmeasured.estimated_wait_ms, None);
    assert_eq!(unmeasured.poll_after_ms, 3_000);
}

#[test]
fn positions_come_from_the_front() {
    use ticket_core::domain::LinePart;
    use ticket_core::domain::line_position::PartFront;
    let mut front = LineFront::default();
    *front.part_mut(LinePart::AfterOpening) = PartFront {
        entered: 40,
        ranked: 40,
        lowest_open: Some(5),
        decided_beyond: vec![9],
    };
    let board = Board {
        lines: HashMap::from([(ConcertId(1), front)]),
        ..Board::default()
    };
    let rank = |place| LineRank::new(LinePart::AfterOpening, place);
    assert_eq!(
        board.place(ConcertId(1), rank(5)).map(|p| p.position),
        Some(1)
    );
    assert_eq!(
        board.place(ConcertId(1), rank(12)).map(|p| p.position),
        Some(7)
    );
    assert!(board.has_passed(ConcertId(1), rank(4)));
    assert!(board.has_passed(ConcertId(1), rank(9)));
    assert!(!board.has_passed(ConcertId(1), rank(12)));
    assert_eq!(board.place(ConcertId(2), rank(5)), None);
}
