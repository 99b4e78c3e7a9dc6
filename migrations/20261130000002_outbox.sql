-- Events written in the same transaction as the change they announce
-- (transactional outbox), delivered after commit by a relay. An event exists
-- if and only if its change committed.
CREATE TABLE outbox (
    id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    event_type   VARCHAR(64) NOT NULL,
    aggregate_id BIGINT UNSIGNED NOT NULL,
    payload      TEXT NOT NULL,
    created_at   DATETIME(6) NOT NULL,
    published_at DATETIME(6) NULL,
    PRIMARY KEY (id),
    INDEX idx_outbox_unpublished (published_at, id),
    INDEX idx_outbox_aggregate (event_type, aggregate_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
