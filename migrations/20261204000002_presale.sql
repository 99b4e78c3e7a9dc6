-- Presale with access codes: from presale_starts_at until opens_at a
-- request must carry a valid code. A code's hash is kept, never the code;
-- it binds to the first account that uses it. What it has taken (uses and
-- seats) is counted from the requests that carry it, so nothing here can
-- drift from them.
ALTER TABLE concerts
    ADD COLUMN presale_starts_at DATETIME(6) NULL AFTER opens_at;

CREATE TABLE access_codes (
    id             BIGINT UNSIGNED  NOT NULL AUTO_INCREMENT,
    concert_id     BIGINT UNSIGNED  NOT NULL,
    code_hash      BINARY(32)       NOT NULL,
    uses_per_code  SMALLINT UNSIGNED NOT NULL,
    seats_per_code SMALLINT UNSIGNED NOT NULL,
    user_id        BIGINT UNSIGNED  NULL,
    revoked_at     DATETIME(6)      NULL,
    created_at     DATETIME(6)      NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT uq_access_codes_hash UNIQUE (concert_id, code_hash),
    CONSTRAINT fk_access_codes_concert FOREIGN KEY (concert_id) REFERENCES concerts (id),
    CONSTRAINT fk_access_codes_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE SET NULL,
    CONSTRAINT ck_access_codes_uses CHECK (uses_per_code BETWEEN 1 AND 1000),
    CONSTRAINT ck_access_codes_seats CHECK (seats_per_code BETWEEN 1 AND 1000)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

ALTER TABLE reservation_queue
    ADD COLUMN access_code_id BIGINT UNSIGNED NULL,
    ADD CONSTRAINT fk_queue_access_code FOREIGN KEY (access_code_id) REFERENCES access_codes (id),
    ADD INDEX idx_queue_access_code (access_code_id);
