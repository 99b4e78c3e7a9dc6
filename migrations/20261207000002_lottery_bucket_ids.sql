-- Each lottery bucket keeps its requests' ids in drawn order, written once
-- at the count: a request's place is then its bucket's row read by its key
-- (no count over the line's index, whose entries the deciding workers keep
-- rewriting during the sale). Lotteries counted before are counted again
-- by the workers (an opened lottery whose count is missing).
ALTER TABLE lottery_buckets ADD COLUMN ids MEDIUMTEXT NULL;
UPDATE sale_lines SET lottery_counted = NULL WHERE lottery_counted IS NOT NULL;
DELETE FROM lottery_buckets;
