-- Positions without reading the line. Every request gets a rank when its
-- place is fixed: in arrival order when it is written (presale requests,
-- and requests after the opening), in the lottery's drawn order when its
-- sale opens (lottery requests). A rank is its part of the line's base
-- (presale 0, lottery 2^40, after the opening 2^41) plus its 1-based place
-- in that part, so that rank order is line order within a concert.
--
-- A position is then the rank against the line's front, the lowest rank
-- still open in each part: a few index dives per concert, whatever the
-- line's length (`db::line::fronts`, `domain::line_position`).
ALTER TABLE reservation_queue
    ADD COLUMN line_rank BIGINT UNSIGNED NULL AFTER line_key,
    ADD INDEX idx_queue_concert_rank (concert_id, status, line_rank);

-- How many requests each part of a concert's line has had. The row is
-- locked by every transaction that writes requests of the concert, from
-- before its INSERT to its commit, so that ranks follow ids (line order);
-- the opening locks it while it ranks the lottery, a chunk at a time.
CREATE TABLE sale_lines (
    concert_id      BIGINT UNSIGNED NOT NULL,
    presale_entered BIGINT UNSIGNED NOT NULL DEFAULT 0,
    -- Lottery requests written (WAITING, then ranked at the opening).
    lottery_entered BIGINT UNSIGNED NOT NULL DEFAULT 0,
    -- Lottery requests ranked so far.
    lottery_ranked  BIGINT UNSIGNED NOT NULL DEFAULT 0,
    after_entered   BIGINT UNSIGNED NOT NULL DEFAULT 0,
    PRIMARY KEY (concert_id),
    CONSTRAINT fk_sale_lines_concert FOREIGN KEY (concert_id) REFERENCES concerts (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- The requests open when this runs get their ranks, in line order.
UPDATE reservation_queue q
JOIN (
    SELECT id,
           ROW_NUMBER() OVER (PARTITION BY concert_id, part ORDER BY line_key, id) AS n,
           part
    FROM (SELECT id, concert_id, line_key,
                 IF(line_key = 0, 0, IF(line_key < 4611686018427387904, 1, 2)) AS part
          FROM reservation_queue
          WHERE status IN ('PENDING', 'PROCESSING')) o
) r ON r.id = q.id
SET q.line_rank = r.part * 1099511627776 + r.n;

INSERT INTO sale_lines (concert_id, presale_entered, lottery_entered, lottery_ranked, after_entered)
SELECT c.id,
       COALESCE((SELECT MAX(q.line_rank) FROM reservation_queue q
                 WHERE q.concert_id = c.id AND q.line_rank < 1099511627776), 0),
       COALESCE((SELECT MAX(q.line_rank) - 1099511627776 FROM reservation_queue q
                 WHERE q.concert_id = c.id AND q.line_rank >= 1099511627776
                   AND q.line_rank < 2199023255552), 0)
         + (SELECT COUNT(*) FROM reservation_queue q WHERE q.concert_id = c.id AND q.status = 'WAITING'),
       COALESCE((SELECT MAX(q.line_rank) - 1099511627776 FROM reservation_queue q
                 WHERE q.concert_id = c.id AND q.line_rank >= 1099511627776
                   AND q.line_rank < 2199023255552), 0),
       COALESCE((SELECT MAX(q.line_rank) - 2199023255552 FROM reservation_queue q
                 WHERE q.concert_id = c.id AND q.line_rank >= 2199023255552), 0)
FROM concerts c;
