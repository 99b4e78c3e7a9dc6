use super::*;
use ticket_core::db::line::LineState;

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
    use ticket_core::domain::LineFront;
    use ticket_core::domain::line_position::PartFront;
    let mut front = LineFront::default();
    *front.part_mut(LinePart::AfterOpening) = PartFront {
        entered: 40,
        placed: 40,
        lowest_open: Some(5),
        decided_beyond: vec![9],
    };
    let line = LineState {
        front,
        lottery: None,
        opened: true,
    };
    let board = Board {
        lines: HashMap::from([(ConcertId(1), line)]),
        ..Board::default()
    };
    let rank = |place| LineRank::new(LinePart::AfterOpening, place);
    let key = LineKey::AFTER_OPENING;
    let place = |p| board.place(ConcertId(1), rank(p), key).map(|p| p.position);
    assert_eq!(place(5), Some(1));
    assert_eq!(place(12), Some(7));
    assert!(board.has_passed(ConcertId(1), rank(4), key));
    assert!(board.has_passed(ConcertId(1), rank(9), key));
    assert!(!board.has_passed(ConcertId(1), rank(12), key));
    assert_eq!(board.place(ConcertId(2), rank(5), key), None);
}
