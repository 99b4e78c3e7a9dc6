-- Best available: a request may ask for `seat_count` places of a price
-- category (side by side, the best the line leaves it) instead of naming
-- seats. Such a request names no seat: its pool is in `request_pools`, one
-- row a request, and the seats it wins are its reservation's.
ALTER TABLE reservation_queue MODIFY COLUMN seat_id BIGINT UNSIGNED NULL;

-- A row is open while its request is (WAITING, PENDING or PROCESSING), as
-- in request_seats: (user, concert, open category) unique is "one open
-- request a fan and category" (a second click is the first), and the open
-- rows of a category in line order ((line key, queue id)) are its line,
-- which a decision folds into the line of each of the category's seats.
CREATE TABLE request_pools (
    queue_id      BIGINT UNSIGNED  NOT NULL,
    user_id       BIGINT UNSIGNED  NOT NULL,
    concert_id    BIGINT UNSIGNED  NOT NULL,
    category      TINYINT UNSIGNED NOT NULL,
    seat_count    TINYINT UNSIGNED NOT NULL,
    allow_split   TINYINT(1)       NOT NULL DEFAULT 0,
    line_key      BIGINT UNSIGNED  NOT NULL,
    is_open       TINYINT(1)       NOT NULL DEFAULT 1,
    open_category TINYINT UNSIGNED GENERATED ALWAYS AS (IF(is_open = 1, category, NULL)) STORED,
    PRIMARY KEY (queue_id),
    CONSTRAINT uq_request_pools_open UNIQUE (user_id, concert_id, open_category),
    CONSTRAINT fk_request_pools_queue FOREIGN KEY (queue_id) REFERENCES reservation_queue (id),
    CONSTRAINT ck_request_pools_count CHECK (seat_count BETWEEN 1 AND 10),
    INDEX idx_request_pools_line (concert_id, open_category, line_key, queue_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- A category's free seats, best first: a decision reads the first few
-- thousand of a category (AVAILABLE ones through this index, holds that
-- have ended among the HELD ones), not the whole category, then the whole
-- of the rows they are in (a block lies in one row).
ALTER TABLE seats
    ADD INDEX idx_seats_best (concert_id, category, status, seat_rank),
    ADD INDEX idx_seats_row (concert_id, row_index);
