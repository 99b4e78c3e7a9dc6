-- Positions without reading the line, and an opening without admission.
--
-- A presale request, or a request after the opening, gets its rank as it
-- is written: its part of the line's base (presale 0, after the opening
-- 2^41) plus its 1-based place in that part, in arrival (id) order. A
-- lottery request keeps no rank: its place is its drawn key's rank among
-- the lottery, known from the lottery's buckets (counted once, at the
-- opening) and a count within one bucket (`db::line::lottery_place`).
--
-- A lottery request stays WAITING until it is decided: once its sale has
-- opened (by the database's clock) the claim reads the lottery's WAITING
-- rows beside the PENDING ones, in line order. Nothing is written per
-- request at the opening.
--
-- A claim takes one concert's requests (a concert in line, in turn), in
-- line order, through the concert's line index; so does the line's front
-- (the lowest open request of each part, a few dives per concert whatever
-- the line's length). Every claim locking its rows through this one index
-- is what lets a decision change its rows' other index entries without
-- waiting for another worker's claim.
ALTER TABLE reservation_queue
    ADD COLUMN line_rank BIGINT UNSIGNED NULL AFTER line_key,
    ADD INDEX idx_queue_concert_line (concert_id, status, line_key, id);

-- Each concert's line: how many requests each part has had, and its
-- lottery's state. Every transaction that writes requests of the concert
-- locks the row from before its INSERT to its commit, so that ranks follow
-- ids (line order); the opening locks it while it counts the lottery.
CREATE TABLE sale_lines (
    concert_id          BIGINT UNSIGNED  NOT NULL,
    presale_entered     BIGINT UNSIGNED  NOT NULL DEFAULT 0,
    lottery_entered     BIGINT UNSIGNED  NOT NULL DEFAULT 0,
    after_entered       BIGINT UNSIGNED  NOT NULL DEFAULT 0,
    -- 1 while the concert may have open requests: the claims look in its
    -- line (set as requests are written, cleared once none is open).
    in_line             TINYINT(1)       NOT NULL DEFAULT 0,
    -- Lottery requests counted into the buckets at the opening (NULL: not
    -- counted yet), and the buckets' width: 2^bits buckets over the keys.
    lottery_counted     BIGINT UNSIGNED  NULL,
    lottery_bucket_bits TINYINT UNSIGNED NOT NULL DEFAULT 0,
    PRIMARY KEY (concert_id),
    INDEX idx_sale_lines_in_line (in_line),
    CONSTRAINT fk_sale_lines_concert FOREIGN KEY (concert_id) REFERENCES concerts (id),
    CONSTRAINT ck_sale_lines_bits CHECK (lottery_bucket_bits <= 40)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- A lottery's buckets: how many of its requests have a key below each
-- bucket's (only buckets that hold a request have a row).
CREATE TABLE lottery_buckets (
    concert_id   BIGINT UNSIGNED NOT NULL,
    bucket       BIGINT UNSIGNED NOT NULL,
    before_count BIGINT UNSIGNED NOT NULL,
    requests     BIGINT UNSIGNED NOT NULL,
    PRIMARY KEY (concert_id, bucket),
    CONSTRAINT fk_lottery_buckets_concert FOREIGN KEY (concert_id) REFERENCES concerts (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- The presale and after-opening requests open when this runs get their
-- ranks, in line order; lottery requests are counted.
UPDATE reservation_queue q
JOIN (
    SELECT id,
           ROW_NUMBER() OVER (PARTITION BY concert_id, part ORDER BY id) AS n,
           part
    FROM (SELECT id, concert_id, IF(line_key = 0, 0, 2) AS part
          FROM reservation_queue
          WHERE status IN ('PENDING', 'PROCESSING')
            AND (line_key = 0 OR line_key >= 4611686018427387904)) o
) r ON r.id = q.id
SET q.line_rank = r.part * 1099511627776 + r.n;

INSERT INTO sale_lines (concert_id, presale_entered, lottery_entered, after_entered, in_line)
SELECT c.id,
       COALESCE((SELECT MAX(q.line_rank) FROM reservation_queue q
                 WHERE q.concert_id = c.id AND q.line_rank < 1099511627776), 0),
       (SELECT COUNT(*) FROM reservation_queue q
        WHERE q.concert_id = c.id AND q.line_key > 0 AND q.line_key < 4611686018427387904),
       COALESCE((SELECT MAX(q.line_rank) - 2199023255552 FROM reservation_queue q
                 WHERE q.concert_id = c.id AND q.line_rank > 2199023255552), 0),
       EXISTS (SELECT 1 FROM reservation_queue q WHERE q.concert_id = c.id
               AND q.status IN ('WAITING', 'PENDING', 'PROCESSING'))
FROM concerts c;
