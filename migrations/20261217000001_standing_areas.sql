-- Standing areas (issue 47): a concert's floors without seat numbers. Each
-- place of an area is a seat row with the area's position and an entry
-- number (`row_position` + 1, ranked in that order: the earlier in line,
-- the lower the number, the earlier through the door), so holds, claims,
-- payments, tickets and check-in treat a place as a seat; the seat map
-- and the seat list leave places out. An area's price category is named
-- (NULL: the concert's first, or none without categories) and follows a
-- change of the concert's categories as a plan's seats do.
CREATE TABLE standing_areas (
    concert_id    BIGINT UNSIGNED  NOT NULL,
    position      TINYINT UNSIGNED NOT NULL,
    name          VARCHAR(40)      NOT NULL,
    capacity      INT UNSIGNED     NOT NULL,
    category_name VARCHAR(40)      NULL,
    PRIMARY KEY (concert_id, position),
    CONSTRAINT uq_standing_areas_name UNIQUE (concert_id, name),
    CONSTRAINT fk_standing_areas_concert FOREIGN KEY (concert_id) REFERENCES concerts (id),
    CONSTRAINT ck_standing_areas_capacity CHECK (capacity BETWEEN 1 AND 100000)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- A seat's pool for best available is its area when it has one, else its
-- price category: the best-available index leads with the area, so that a
-- category's seats (area NULL) and an area's places are read apart, each
-- in rank order (the row too, so that a window's read is the index's
-- alone). Places of one area share a row of their own, which no seat of
-- the grid or a plan uses.
-- A row's free seats from a rank on: what a decision adds to its window
-- (every free seat of a row it touched), read through the index without
-- the row's sold seats.
ALTER TABLE seats
    ADD COLUMN area TINYINT UNSIGNED NULL,
    DROP INDEX idx_seats_best,
    ADD INDEX idx_seats_best (concert_id, area, category, status, seat_rank, row_index),
    DROP INDEX idx_seats_row,
    ADD INDEX idx_seats_row (concert_id, row_index, seat_rank);

-- A request by count asks for a category's seats or an area's places: its
-- pool is 256 + the area's position for an area, else the category's, and
-- "one open request a fan and pool" and a pool's line follow it.
ALTER TABLE request_pools
    MODIFY COLUMN category TINYINT UNSIGNED NULL,
    ADD COLUMN area TINYINT UNSIGNED NULL,
    ADD CONSTRAINT ck_request_pools_pool CHECK ((category IS NULL) <> (area IS NULL)),
    DROP INDEX uq_request_pools_open,
    DROP INDEX idx_request_pools_line;
ALTER TABLE request_pools
    DROP COLUMN open_category;
ALTER TABLE request_pools
    ADD COLUMN open_pool SMALLINT UNSIGNED
        GENERATED ALWAYS AS (IF(is_open = 1, IF(area IS NULL, category, 256 + area), NULL)) STORED,
    ADD CONSTRAINT uq_request_pools_open UNIQUE (user_id, concert_id, open_pool),
    ADD INDEX idx_request_pools_line (concert_id, open_pool, line_key, queue_id);
