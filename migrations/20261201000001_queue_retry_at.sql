-- A PENDING row is not claimed before `retry_at` (NULL: at once). Set when a
-- worker hands a row back: deferred because an earlier request for the same
-- seat is still open elsewhere, or after a failed attempt (with backoff).
-- `attempts` counts claims that ended without a decision; a row that reaches
-- the worker's limit ends FAILED with reason PROCESSING_FAILED.
ALTER TABLE reservation_queue ADD COLUMN retry_at DATETIME(6) NULL AFTER attempts;
