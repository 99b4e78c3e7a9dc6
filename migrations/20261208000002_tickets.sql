-- E-tickets (issue 31): one per seat of a CONFIRMED reservation, written in
-- the transaction that confirms it. A ticket's code is signed from its row
-- (id, concert, seat, version) and never stored. Cancelling voids the
-- reservation's tickets; scanners read the voided ones by `voided_at`.
-- A check-in sets `checked_in_at` once, by a conditional UPDATE whose count
-- says who was first (the database decides: exactly once).
CREATE TABLE tickets (
    id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    concert_id      BIGINT UNSIGNED NOT NULL,
    reservation_id  BIGINT UNSIGNED NOT NULL,
    seat_id         BIGINT UNSIGNED NOT NULL,
    -- Raised by a reissue: a code of an older version admits nobody.
    version         INT UNSIGNED    NOT NULL DEFAULT 1,
    status          VARCHAR(8)      NOT NULL DEFAULT 'VALID',
    issued_at       DATETIME(6)     NOT NULL,
    voided_at       DATETIME(6)     NULL,
    checked_in_at   DATETIME(6)     NULL,
    checked_in_gate VARCHAR(40)     NULL,
    checked_in_by   BIGINT UNSIGNED NULL,
    PRIMARY KEY (id),
    CONSTRAINT uq_tickets_claim UNIQUE (reservation_id, seat_id),
    CONSTRAINT fk_tickets_reservation FOREIGN KEY (reservation_id) REFERENCES reservations (id),
    CONSTRAINT fk_tickets_seat FOREIGN KEY (seat_id) REFERENCES seats (id),
    CONSTRAINT fk_tickets_concert FOREIGN KEY (concert_id) REFERENCES concerts (id),
    CONSTRAINT ck_tickets_status CHECK (status IN ('VALID', 'VOID')),
    -- The revoked list a scanner asks for: a concert's tickets voided since.
    INDEX idx_tickets_concert_voided (concert_id, voided_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- Reservations confirmed before tickets existed get theirs.
INSERT INTO tickets (concert_id, reservation_id, seat_id, version, status, issued_at)
SELECT rs.concert_id, rs.reservation_id, rs.seat_id, 1, 'VALID', COALESCE(r.confirmed_at, r.created_at)
  FROM reservation_seats rs JOIN reservations r ON r.id = rs.reservation_id
 WHERE rs.status = 'CONFIRMED';
