-- Orders an organizer voids after a sale (bots, fraud) are refunded with
-- their own reason (issue 60); the signals that help pick them: where an
-- account signed up from (kept until the account leaves).
ALTER TABLE refunds DROP CONSTRAINT ck_refunds_reason;
ALTER TABLE refunds ADD CONSTRAINT ck_refunds_reason
    CHECK (reason IN ('LATE_PAYMENT', 'EXTRA_PAYMENT', 'REQUESTED', 'CONCERT_CANCELLED', 'VOIDED'));
ALTER TABLE users ADD COLUMN signup_address VARCHAR(45) NULL;
-- Accounts made from one address, or in one minute: the signals' reads.
CREATE INDEX idx_users_signup_address ON users (signup_address, created_at);
CREATE INDEX idx_users_created ON users (created_at);
