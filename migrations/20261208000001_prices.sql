-- Prices (issue 31). A concert's price categories, in the order the
-- operator gave them (position 0 takes the rows no category names); a
-- seat's category is its position, NULL while the concert has none. The
-- price a seat was decided at is written on its claim, with the category's
-- name and the currency, so that a hold confirms, and a cancel refunds,
-- what the buyer was shown whatever the categories become afterwards.
CREATE TABLE price_categories (
    concert_id BIGINT UNSIGNED  NOT NULL,
    position   TINYINT UNSIGNED NOT NULL,
    name       VARCHAR(40)      NOT NULL,
    -- In the currency's minor units (cents, won): no floating point.
    price      BIGINT UNSIGNED  NOT NULL,
    currency   CHAR(3)          CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    -- The row labels it names, comma-separated (A,B,AA).
    row_labels TEXT             NOT NULL,
    PRIMARY KEY (concert_id, position),
    CONSTRAINT fk_price_categories_concert FOREIGN KEY (concert_id) REFERENCES concerts (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

ALTER TABLE seats ADD COLUMN category TINYINT UNSIGNED NULL;

ALTER TABLE reservation_seats
    ADD COLUMN category VARCHAR(40)     NULL,
    ADD COLUMN price    BIGINT UNSIGNED NULL,
    ADD COLUMN currency CHAR(3)         CHARACTER SET ascii COLLATE ascii_bin NULL;
