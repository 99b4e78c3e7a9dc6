-- The operator's on-sale view reads what the processes already measure:
-- each worker adds how long its decisions took (request to commit) to the
-- decision rate it publishes, and each API instance publishes the requests
-- per second it accepted, per concert, the same way.
ALTER TABLE decision_rates
    ADD COLUMN decision_p50_ms DOUBLE NULL AFTER decisions_per_sec,
    ADD COLUMN decision_p99_ms DOUBLE NULL AFTER decision_p50_ms;

CREATE TABLE request_rates (
    concert_id        BIGINT UNSIGNED NOT NULL,
    instance          VARCHAR(64)     NOT NULL,
    requests_per_sec  DOUBLE          NOT NULL,
    measured_at       DATETIME(6)     NOT NULL,
    PRIMARY KEY (concert_id, instance)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
