-- Every status change of a queue row rewrites each secondary index that
-- contains `status`. Two of them earned nothing:
-- * (seat_id, status): the foreign key needs only seat_id, and the open
--   requests of one seat are found by reading that seat's few rows.
-- * (status, lease_until): expired leases are found among the PROCESSING
--   rows, which are at most the claimed batches, through (status, id).
ALTER TABLE reservation_queue ADD INDEX idx_queue_seat_id (seat_id);
ALTER TABLE reservation_queue DROP INDEX idx_queue_seat;
ALTER TABLE reservation_queue DROP INDEX idx_queue_status_lease;
