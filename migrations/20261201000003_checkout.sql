-- Checkout: several seats per request and per reservation, holds that
-- expire unless confirmed, and an outbox that is delivered.
--
-- Rules every writer follows (they are why nothing here deadlocks):
-- * seats are locked before reservations, and seats in id order;
-- * a reservation_seats row is written only by a transaction holding its
--   seat's lock; a reservations row only by one holding all its seats' locks.

-- Concert settings. hold_seconds 0 keeps the original flow: a won request is
-- CONFIRMED at once. Above 0 it is HELD for that long unless confirmed.
ALTER TABLE concerts
    ADD COLUMN hold_seconds        INT UNSIGNED     NOT NULL DEFAULT 0 AFTER seat_count,
    ADD COLUMN max_seats_per_order TINYINT UNSIGNED NOT NULL DEFAULT 4 AFTER hold_seconds,
    ADD CONSTRAINT ck_concerts_hold_seconds CHECK (hold_seconds <= 3600),
    ADD CONSTRAINT ck_concerts_max_seats CHECK (max_seats_per_order BETWEEN 1 AND 10);

-- A seat is HELD while a hold on it runs; `held_until` is that hold's end.
-- A HELD seat past `held_until` is free for any decision at once; the sweep
-- sets it AVAILABLE within seconds.
ALTER TABLE seats DROP CONSTRAINT ck_seats_status;
ALTER TABLE seats
    ADD COLUMN held_until DATETIME(6) NULL AFTER status,
    ADD CONSTRAINT ck_seats_status CHECK (status IN ('AVAILABLE', 'HELD', 'RESERVED'));

-- The queue: a request names one concert and one or more seats; `seat_id` is
-- the first (lowest) of them, kept for one-seat clients. The concert id makes
-- every row of a sale findable by concert (sharding).
ALTER TABLE reservation_queue
    ADD COLUMN concert_id BIGINT UNSIGNED  NULL AFTER user_id,
    ADD COLUMN seat_count TINYINT UNSIGNED NOT NULL DEFAULT 1 AFTER seat_id;
UPDATE reservation_queue q JOIN seats s ON s.id = q.seat_id SET q.concert_id = s.concert_id;
ALTER TABLE reservation_queue MODIFY COLUMN concert_id BIGINT UNSIGNED NOT NULL;

-- Every seat of every request. "One open request per user and seat" now
-- counts seats: `open_seat_id` is the seat while the request is open, else
-- NULL, and (user, open seat) is unique. The same column, ordered by queue
-- id, finds the earliest open request for a seat (first come, first served)
-- among open requests only, however long the seat's history.
CREATE TABLE request_seats (
    queue_id     BIGINT UNSIGNED NOT NULL,
    seat_id      BIGINT UNSIGNED NOT NULL,
    user_id      BIGINT UNSIGNED NOT NULL,
    concert_id   BIGINT UNSIGNED NOT NULL,
    is_open      TINYINT(1)      NOT NULL DEFAULT 1,
    open_seat_id BIGINT UNSIGNED GENERATED ALWAYS AS (IF(is_open = 1, seat_id, NULL)) STORED,
    PRIMARY KEY (queue_id, seat_id),
    CONSTRAINT uq_request_seats_open UNIQUE (user_id, open_seat_id),
    CONSTRAINT fk_request_seats_queue FOREIGN KEY (queue_id) REFERENCES reservation_queue (id),
    CONSTRAINT fk_request_seats_seat FOREIGN KEY (seat_id) REFERENCES seats (id),
    INDEX idx_request_seats_open (open_seat_id, queue_id),
    INDEX idx_request_seats_seat (seat_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

INSERT INTO request_seats (queue_id, seat_id, user_id, concert_id, is_open)
SELECT id, seat_id, user_id, concert_id, IF(status IN ('PENDING', 'PROCESSING'), 1, 0) FROM reservation_queue;

-- The request's own uniqueness moved to request_seats.
ALTER TABLE reservation_queue
    DROP INDEX uq_queue_open_request,
    DROP COLUMN open_seat_id;

-- Reservations: HELD (with its end), CONFIRMED, EXPIRED or CANCELLED; the
-- request that made it; `seat_id` is its first seat, kept for one-seat
-- clients. A confirm may carry the buyer's payment reference and an
-- Idempotency-Key.
ALTER TABLE reservations DROP CONSTRAINT ck_reservations_status;
ALTER TABLE reservations
    DROP INDEX uq_reservations_confirmed_seat,
    DROP COLUMN confirmed_seat_id,
    ADD COLUMN queue_id          BIGINT UNSIGNED NULL AFTER seat_id,
    ADD COLUMN hold_expires_at   DATETIME(6)     NULL AFTER status,
    ADD COLUMN confirmed_at      DATETIME(6)     NULL AFTER hold_expires_at,
    ADD COLUMN payment_reference VARCHAR(128)    NULL AFTER confirmed_at,
    ADD COLUMN confirm_key       VARCHAR(128)    NULL AFTER payment_reference,
    ADD CONSTRAINT ck_reservations_status CHECK (status IN ('HELD', 'CONFIRMED', 'EXPIRED', 'CANCELLED')),
    ADD CONSTRAINT uq_reservations_queue UNIQUE (queue_id),
    -- The expiry sweep: held reservations by the end of their hold.
    ADD INDEX idx_reservations_holds (status, hold_expires_at);
UPDATE reservations r JOIN reservation_queue q ON q.reservation_id = r.id AND q.status = 'SUCCESS'
SET r.queue_id = q.id;
UPDATE reservations SET confirmed_at = created_at WHERE status IN ('CONFIRMED', 'CANCELLED');

-- Every seat of every reservation. The no-double-booking backstop:
-- `live_seat_id` is the seat while the claim is HELD or CONFIRMED, else
-- NULL, and it is unique, so at most one live claim per seat whatever the
-- code does, while any number of ended ones may precede it.
CREATE TABLE reservation_seats (
    reservation_id BIGINT UNSIGNED NOT NULL,
    seat_id        BIGINT UNSIGNED NOT NULL,
    concert_id     BIGINT UNSIGNED NOT NULL,
    status         VARCHAR(16)     NOT NULL,
    live_seat_id   BIGINT UNSIGNED GENERATED ALWAYS AS (IF(status IN ('HELD', 'CONFIRMED'), seat_id, NULL)) STORED,
    PRIMARY KEY (reservation_id, seat_id),
    CONSTRAINT uq_reservation_seats_live UNIQUE (live_seat_id),
    CONSTRAINT fk_reservation_seats_reservation FOREIGN KEY (reservation_id) REFERENCES reservations (id),
    CONSTRAINT fk_reservation_seats_seat FOREIGN KEY (seat_id) REFERENCES seats (id),
    CONSTRAINT ck_reservation_seats_status CHECK (status IN ('HELD', 'CONFIRMED', 'EXPIRED', 'CANCELLED')),
    INDEX idx_reservation_seats_seat (seat_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

INSERT INTO reservation_seats (reservation_id, seat_id, concert_id, status)
SELECT id, seat_id, concert_id, status FROM reservations;

-- The outbox is delivered (webhooks): each event belongs to a concert, is
-- tried until delivered or given up (`failed_at`), and is claimed under a
-- lease like queue rows are. Events of one reservation go out in id order.
ALTER TABLE outbox
    ADD COLUMN concert_id      BIGINT UNSIGNED NULL AFTER aggregate_id,
    ADD COLUMN attempts        INT UNSIGNED    NOT NULL DEFAULT 0,
    ADD COLUMN next_attempt_at DATETIME(6)     NULL,
    ADD COLUMN lease_token     BIGINT UNSIGNED NULL,
    ADD COLUMN lease_until     DATETIME(6)     NULL,
    ADD COLUMN failed_at       DATETIME(6)     NULL,
    ADD COLUMN last_error      VARCHAR(255)    NULL,
    ADD INDEX idx_outbox_reservation (aggregate_id, id),
    ADD INDEX idx_outbox_failed (failed_at);
UPDATE outbox o JOIN reservations r ON r.id = o.aggregate_id SET o.concert_id = r.concert_id;
UPDATE outbox SET event_type = 'ReservationConfirmed' WHERE event_type = 'ReservationSucceeded';
