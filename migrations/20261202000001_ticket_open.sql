-- Ticket-open day: a sale that opens at a given time, a lottery among
-- those who come early, the line's order as data, and the decision rate
-- the workers measure (for the wait shown to people in line).

-- Requests are refused before opens_at - lottery_window_seconds; those
-- placed from then until opens_at join the lottery. NULL: open from the
-- start, as before.
ALTER TABLE concerts
    ADD COLUMN opens_at               DATETIME(6)  NULL AFTER max_seats_per_order,
    ADD COLUMN lottery_window_seconds INT UNSIGNED NOT NULL DEFAULT 0 AFTER opens_at,
    ADD CONSTRAINT ck_concerts_lottery_window CHECK (lottery_window_seconds <= 86400),
    -- The workers' opening step finds the sales that have just opened.
    ADD INDEX idx_concerts_opens_at (opens_at);

-- The line: requests in (line_key, id) order. A lottery request gets a
-- uniformly random key below 2^62, drawn once when it is written; every
-- other request gets 2^62, so it queues behind all of them in arrival (id)
-- order. A lottery request is WAITING until its sale opens, and no worker
-- claims a WAITING row.
--
-- The claim index carries concert_id so that the open line of a concert
-- (positions, the opening step) is read from the index alone.
ALTER TABLE reservation_queue DROP CONSTRAINT ck_queue_status;
ALTER TABLE reservation_queue
    ADD COLUMN line_key BIGINT UNSIGNED NOT NULL DEFAULT 4611686018427387904 AFTER seat_count,
    ADD CONSTRAINT ck_queue_status CHECK (status IN ('WAITING', 'PENDING', 'PROCESSING', 'SUCCESS', 'FAILED')),
    ADD INDEX idx_queue_line (status, line_key, id, concert_id),
    DROP INDEX idx_queue_status_id;

-- A seat's line follows the same order.
ALTER TABLE request_seats
    ADD COLUMN line_key BIGINT UNSIGNED NOT NULL DEFAULT 4611686018427387904 AFTER concert_id,
    ADD INDEX idx_request_seats_line (open_seat_id, line_key, queue_id),
    DROP INDEX idx_request_seats_open;

-- Decisions per second, per concert, as each worker measured them over its
-- last few seconds; a row not refreshed for a while no longer counts.
CREATE TABLE decision_rates (
    concert_id         BIGINT UNSIGNED NOT NULL,
    worker             VARCHAR(64)     NOT NULL,
    decisions_per_sec  DOUBLE          NOT NULL,
    measured_at        DATETIME(6)     NOT NULL,
    PRIMARY KEY (concert_id, worker)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
