-- A cap per fan: the seats one user may have in a concert (held, confirmed
-- and asked for by open requests). A concert's default is its order size,
-- so a concert that existed before the cap gets that.
ALTER TABLE concerts
    ADD COLUMN max_seats_per_user TINYINT UNSIGNED NOT NULL DEFAULT 4 AFTER max_seats_per_order;

UPDATE concerts SET max_seats_per_user = max_seats_per_order;

ALTER TABLE concerts
    ADD CONSTRAINT ck_concerts_max_seats_per_user CHECK (max_seats_per_user BETWEEN 1 AND 100);
