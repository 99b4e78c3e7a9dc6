-- Issue 47: seats where a venue has them. Every seat knows its row (unique
-- in its concert), its position in the row's seat order (counted over every
-- seat of the row, whatever its category, so that two seats are side by side
-- exactly when their positions follow) and its rank, the plan's order of
-- preference (smaller is better), which best-available requests follow.
-- Seats from a seating plan also keep the plan's zone, row and seat labels,
-- their drawing position and the plan's category name (what maps them to
-- the concert's price category of that name).
ALTER TABLE seats
    ADD COLUMN row_index     INT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN row_position  INT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN seat_rank     INT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN zone          VARCHAR(64)  NULL,
    ADD COLUMN row_label     VARCHAR(32)  NULL,
    ADD COLUMN plan_label    VARCHAR(32)  NULL,
    ADD COLUMN guid          VARCHAR(64)  NULL,
    ADD COLUMN pos_x         DOUBLE       NULL,
    ADD COLUMN pos_y         DOUBLE       NULL,
    ADD COLUMN plan_category VARCHAR(40)  NULL;

-- The seats rows × seatsPerRow made (rows A to ZZ): row A is row 0 and the
-- front; in a row the centre comes first (left of it before right), as the
-- application ranks them (`best::grid_rank`). Other seats (added one by
-- one under other names) keep row 0, position 0 and rank 0.
UPDATE seats
   SET row_index = IF(seat_number REGEXP '^[A-Z][0-9]+$', ASCII(seat_number) - 65,
                      (ASCII(seat_number) - 64) * 26 + ASCII(SUBSTRING(seat_number, 2, 1)) - 65),
       row_position = CAST(SUBSTRING(seat_number, IF(seat_number REGEXP '^[A-Z][0-9]+$', 2, 3)) AS UNSIGNED) - 1
 WHERE seat_number REGEXP '^[A-Z]{1,2}[0-9]+$' AND seat_number NOT REGEXP '^[A-Z]{1,2}0';
UPDATE seats s
  JOIN (SELECT concert_id, MAX(row_position) + 1 AS width FROM seats
         WHERE seat_number REGEXP '^[A-Z]{1,2}[0-9]+$' GROUP BY concert_id) w
    ON w.concert_id = s.concert_id
   SET s.seat_rank = s.row_index * w.width
                     + ABS(CAST(2 * s.row_position + 1 AS SIGNED) - CAST(w.width AS SIGNED))
                     - IF(2 * s.row_position + 1 < w.width, 1, 0)
 WHERE s.seat_number REGEXP '^[A-Z]{1,2}[0-9]+$' AND s.seat_number NOT REGEXP '^[A-Z]{1,2}0';

-- A concert's plan as the operator gave it (pretix's format), for GET.
CREATE TABLE seating_plans (
    concert_id BIGINT UNSIGNED NOT NULL,
    name       VARCHAR(200)    NOT NULL,
    plan       MEDIUMTEXT      NOT NULL,
    seat_count INT UNSIGNED    NOT NULL,
    created_at DATETIME(6)     NOT NULL,
    PRIMARY KEY (concert_id),
    CONSTRAINT fk_seating_plans_concert FOREIGN KEY (concert_id) REFERENCES concerts (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
