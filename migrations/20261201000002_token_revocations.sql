-- Tokens are verified without the database; this table voids them early.
-- A row says: every token of `user_id` issued before `revoked_before` is
-- void (written in the transaction of a password change, an account
-- deletion or a "log out everywhere"). Each API instance keeps the rows of
-- the last token lifetime in memory and reads new ones every second by
-- `recorded_at`, the database's own clock (UTC_TIMESTAMP). No foreign key: a deleted
-- account's tokens must stay void after its row is gone.
CREATE TABLE token_revocations (
    id             BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    user_id        BIGINT UNSIGNED NOT NULL,
    revoked_before DATETIME(6) NOT NULL,
    recorded_at    DATETIME(6) NOT NULL,
    PRIMARY KEY (id),
    INDEX idx_token_revocations_recorded (recorded_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
