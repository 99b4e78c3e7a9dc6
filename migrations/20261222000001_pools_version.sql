-- A concert's categories and standing areas change under its line's lock;
-- each change counts here (issue 59). A request by count carries the count
-- its pool's position was read at, and the group that writes it, holding
-- the line, names its pool again only when the count has moved since.
ALTER TABLE sale_lines ADD COLUMN pools_version INT UNSIGNED NOT NULL DEFAULT 0;
