-- A waiting list for the sold-out crowd: fans who join when no seat is free
-- are offered seats that come back (a cancel, an expired hold, an admin's
-- release) and that no open request wants, in the order they joined, as
-- holds of their own.
ALTER TABLE concerts
    ADD COLUMN waiting_list_offer_seconds INT UNSIGNED NOT NULL DEFAULT 900 AFTER proof_of_work,
    ADD CONSTRAINT ck_concerts_waiting_list_offer CHECK (waiting_list_offer_seconds BETWEEN 1 AND 86400);

-- Where a reservation came from: a request that won in line, or an offer.
ALTER TABLE reservations
    ADD COLUMN source VARCHAR(16) NOT NULL DEFAULT 'LINE' AFTER queue_id,
    ADD CONSTRAINT ck_reservations_source CHECK (source IN ('LINE', 'WAITING_LIST'));

-- One row per concert that has had a list: what the offering worker locks,
-- so that two workers never offer one list's seats out of order. Nothing
-- else locks it (entries refer to the concert, not to it), so that a crowd
-- joining never keeps the offers waiting.
CREATE TABLE waiting_lists (
    concert_id BIGINT UNSIGNED NOT NULL,
    created_at DATETIME(6)     NOT NULL,
    PRIMARY KEY (concert_id),
    CONSTRAINT fk_waiting_lists_concert FOREIGN KEY (concert_id) REFERENCES concerts (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- Entries are kept after they end (LEFT, or OFFERED with the offer's
-- reservation), so that who was offered what, and in which order, can be
-- checked afterwards. A fan waits at most once per concert at a time.
CREATE TABLE waiting_list_entries (
    id             BIGINT UNSIGNED  NOT NULL AUTO_INCREMENT,
    concert_id     BIGINT UNSIGNED  NOT NULL,
    user_id        BIGINT UNSIGNED  NOT NULL,
    seats          TINYINT UNSIGNED NOT NULL,
    status         VARCHAR(16)      NOT NULL DEFAULT 'WAITING',
    reservation_id BIGINT UNSIGNED  NULL,
    created_at     DATETIME(6)      NOT NULL,
    ended_at       DATETIME(6)      NULL,
    waiting_user_id BIGINT UNSIGNED GENERATED ALWAYS AS (IF(status = 'WAITING', user_id, NULL)) STORED,
    PRIMARY KEY (id),
    CONSTRAINT uq_waiting_list_waiting UNIQUE (concert_id, waiting_user_id),
    CONSTRAINT uq_waiting_list_reservation UNIQUE (reservation_id),
    CONSTRAINT fk_waiting_list_entries_concert FOREIGN KEY (concert_id) REFERENCES concerts (id),
    CONSTRAINT fk_waiting_list_entries_user FOREIGN KEY (user_id) REFERENCES users (id),
    CONSTRAINT fk_waiting_list_entries_reservation FOREIGN KEY (reservation_id) REFERENCES reservations (id),
    CONSTRAINT ck_waiting_list_entries_status CHECK (status IN ('WAITING', 'OFFERED', 'LEFT')),
    CONSTRAINT ck_waiting_list_entries_seats CHECK (seats BETWEEN 1 AND 10),
    -- The list in order, and the lists that have someone waiting.
    INDEX idx_waiting_list_order (status, concert_id, id),
    INDEX idx_waiting_list_user (user_id, concert_id, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
