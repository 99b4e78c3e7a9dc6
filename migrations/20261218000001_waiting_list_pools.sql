-- A waiting list per price category or standing area (issue 47): an entry
-- waits for any seat (NULL, as before: never a standing place), for a
-- category's seats, or for an area's places, coded as a request by count
-- codes its pool (`request_pools.open_pool`: the category's position, or
-- 256 + the area's). The offering step reads the pools fans wait for on
-- one list from the index alone.
ALTER TABLE waiting_list_entries
    ADD COLUMN pool SMALLINT UNSIGNED NULL,
    ADD CONSTRAINT ck_waiting_list_entries_pool CHECK (pool IS NULL OR pool < 512),
    ADD INDEX idx_waiting_list_pools (status, concert_id, pool, id);
