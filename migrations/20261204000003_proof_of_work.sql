-- A price in work for standing in line: a concert's proof-of-work level
-- (0: off), and the challenges already spent, so that a solved one is
-- accepted once, whichever instance sees it (kept until they expire).
ALTER TABLE concerts
    ADD COLUMN proof_of_work TINYINT UNSIGNED NOT NULL DEFAULT 0 AFTER lottery_window_seconds,
    ADD CONSTRAINT ck_concerts_proof_of_work CHECK (proof_of_work <= 12);

CREATE TABLE spent_challenges (
    concert_id  BIGINT UNSIGNED NOT NULL,
    challenge   BINARY(32)      NOT NULL,
    expires_at  DATETIME(6)     NOT NULL,
    PRIMARY KEY (concert_id, challenge),
    INDEX idx_spent_challenges_expiry (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
