-- A concert's time zone (issue 48): the venue's IANA zone, in which the
-- page shows its date and its sale's times whatever the viewer's. Times
-- are still stored in UTC; the zone only says how to show them. Concerts
-- made before it read as UTC, as the server wrote them.
ALTER TABLE concerts
    ADD COLUMN time_zone VARCHAR(64) NOT NULL DEFAULT 'UTC';
