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
fn positions_count_the_requests_ahead() {
    let board = Board {
        lines: HashMap::from([(ConcertId(1), vec![5, 9, 12, 40])]),
        ..Board::default()
    };
    assert_eq!(board.place(ConcertId(1), 5).map(|p| p.position), Some(1));
    assert_eq!(board.place(ConcertId(1), 12).map(|p| p.position), Some(3));
    assert!(board.contains(ConcertId(1), 40));
    assert!(!board.contains(ConcertId(1), 41));
    assert_eq!(board.place(ConcertId(2), 5), None);
}
