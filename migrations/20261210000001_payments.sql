-- Issue 46: money in, money back. Every row carries its concert (sharding
-- by concert), and every money step has a row before it reaches the
-- provider, so a process killed between the two is found and finished.

ALTER TABLE concerts
    -- Until when a fan may refund their own tickets (NULL: never; an
    -- operator always may).
    ADD COLUMN refundable_until DATETIME(6)  NULL,
    -- Set once by the operator's cancel: the sale is over and every
    -- confirmed reservation is refunded by the workers.
    ADD COLUMN cancelled_at     DATETIME(6)  NULL,
    ADD COLUMN cancel_reason    VARCHAR(500) NULL,
    ADD INDEX idx_concerts_cancelled (cancelled_at);

-- A payment of a hold: a PaymentIntent at a provider (STRIPE), or a
-- reference the operator gave when confirming (MANUAL). A hold has at most
-- one open payment; a declined one may be followed by another attempt.
CREATE TABLE payments (
    id                  BIGINT UNSIGNED  NOT NULL AUTO_INCREMENT,
    concert_id          BIGINT UNSIGNED  NOT NULL,
    reservation_id      BIGINT UNSIGNED  NOT NULL,
    user_id             BIGINT UNSIGNED  NOT NULL,
    attempt             TINYINT UNSIGNED NOT NULL DEFAULT 1,
    provider            VARCHAR(16)      NOT NULL,
    -- The provider's id (pi_…); NULL while it is being created, and for
    -- MANUAL payments (whose reference is the reservation's).
    provider_payment_id VARCHAR(255)     CHARACTER SET ascii COLLATE ascii_bin NULL,
    client_secret       VARCHAR(255)     CHARACTER SET ascii COLLATE ascii_bin NULL,
    amount              BIGINT UNSIGNED  NOT NULL,
    currency            CHAR(3)          CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    -- OPEN (waiting for the fan or the provider), SUCCEEDED (money taken),
    -- FAILED (declined: the hold runs on, another attempt may follow),
    -- CANCELED (never paid, and now never will be).
    status              VARCHAR(16)      NOT NULL,
    failure             VARCHAR(255)     NULL,
    created_at          DATETIME(6)      NOT NULL,
    updated_at          DATETIME(6)      NOT NULL,
    succeeded_at        DATETIME(6)      NULL,
    -- When the sweep next asks the provider about it (the database's
    -- clock); NULL once nothing more can happen to it.
    check_at            DATETIME(6)      NULL,
    PRIMARY KEY (id),
    CONSTRAINT uq_payments_attempt UNIQUE (reservation_id, attempt),
    CONSTRAINT uq_payments_provider_id UNIQUE (provider, provider_payment_id),
    CONSTRAINT fk_payments_reservation FOREIGN KEY (reservation_id) REFERENCES reservations (id),
    CONSTRAINT fk_payments_concert FOREIGN KEY (concert_id) REFERENCES concerts (id),
    CONSTRAINT fk_payments_user FOREIGN KEY (user_id) REFERENCES users (id),
    CONSTRAINT ck_payments_provider CHECK (provider IN ('STRIPE', 'MANUAL')),
    CONSTRAINT ck_payments_status CHECK (status IN ('OPEN', 'SUCCEEDED', 'FAILED', 'CANCELED')),
    INDEX idx_payments_check (check_at),
    INDEX idx_payments_concert (concert_id, status)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- Money going back, written (PENDING) in the transaction that decides it
-- (tickets voided, a late payment found), then carried out at the provider
-- by whoever claims it, with the refund's id as the idempotency key.
CREATE TABLE refunds (
    id                 BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    concert_id         BIGINT UNSIGNED NOT NULL,
    reservation_id     BIGINT UNSIGNED NOT NULL,
    payment_id         BIGINT UNSIGNED NOT NULL,
    amount             BIGINT UNSIGNED NOT NULL,
    currency           CHAR(3)         CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    -- LATE_PAYMENT (paid after the hold ended), EXTRA_PAYMENT (a second
    -- payment of a sold hold), REQUESTED (by the fan or an operator),
    -- CONCERT_CANCELLED.
    reason             VARCHAR(24)     NOT NULL,
    -- PENDING, SUCCEEDED, FAILED (refused for good; an operator looks).
    status             VARCHAR(16)     NOT NULL,
    provider_refund_id VARCHAR(255)    CHARACTER SET ascii COLLATE ascii_bin NULL,
    requested_by       BIGINT UNSIGNED NULL,
    attempts           INT UNSIGNED    NOT NULL DEFAULT 0,
    -- When it may be claimed (the next attempt, or the end of a claim's
    -- lease); NULL once it has ended.
    due_at             DATETIME(6)     NULL,
    lease_token        BIGINT UNSIGNED NULL,
    last_error         VARCHAR(255)    NULL,
    created_at         DATETIME(6)     NOT NULL,
    ended_at           DATETIME(6)     NULL,
    PRIMARY KEY (id),
    CONSTRAINT fk_refunds_payment FOREIGN KEY (payment_id) REFERENCES payments (id),
    CONSTRAINT fk_refunds_reservation FOREIGN KEY (reservation_id) REFERENCES reservations (id),
    CONSTRAINT fk_refunds_concert FOREIGN KEY (concert_id) REFERENCES concerts (id),
    CONSTRAINT ck_refunds_reason CHECK (reason IN ('LATE_PAYMENT', 'EXTRA_PAYMENT', 'REQUESTED', 'CONCERT_CANCELLED')),
    CONSTRAINT ck_refunds_status CHECK (status IN ('PENDING', 'SUCCEEDED', 'FAILED')),
    INDEX idx_refunds_due (due_at),
    INDEX idx_refunds_concert (concert_id, status),
    INDEX idx_refunds_payment (payment_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- Which tickets a refund paid back: each at most once.
CREATE TABLE refund_tickets (
    refund_id  BIGINT UNSIGNED NOT NULL,
    ticket_id  BIGINT UNSIGNED NOT NULL,
    concert_id BIGINT UNSIGNED NOT NULL,
    amount     BIGINT UNSIGNED NOT NULL,
    PRIMARY KEY (refund_id, ticket_id),
    CONSTRAINT uq_refund_tickets_ticket UNIQUE (ticket_id),
    CONSTRAINT fk_refund_tickets_refund FOREIGN KEY (refund_id) REFERENCES refunds (id),
    CONSTRAINT fk_refund_tickets_ticket FOREIGN KEY (ticket_id) REFERENCES tickets (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- The provider's events applied, by id: a replay changes nothing.
CREATE TABLE payment_events (
    provider    VARCHAR(16)     NOT NULL,
    event_id    VARCHAR(255)    CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    concert_id  BIGINT UNSIGNED NULL,
    received_at DATETIME(6)     NOT NULL,
    PRIMARY KEY (provider, event_id),
    INDEX idx_payment_events_received (received_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

ALTER TABLE mails DROP CONSTRAINT ck_mails_kind;
ALTER TABLE mails ADD CONSTRAINT ck_mails_kind
    CHECK (kind IN ('ORDER_CONFIRMATION', 'HOLD_REMINDER', 'WAITING_LIST_OFFER', 'REFUND'));

-- Holds sold before payments were recorded were sold on the operator's
-- word: their payment is a MANUAL one of their total.
INSERT INTO payments (concert_id, reservation_id, user_id, attempt, provider, amount, currency, status,
                      created_at, updated_at, succeeded_at)
SELECT r.concert_id, r.id, r.user_id, 1, 'MANUAL', t.total, t.currency, 'SUCCEEDED',
       COALESCE(r.confirmed_at, r.created_at), COALESCE(r.confirmed_at, r.created_at),
       COALESCE(r.confirmed_at, r.created_at)
  FROM reservations r
  JOIN (SELECT reservation_id, SUM(price) AS total, MAX(currency) AS currency FROM reservation_seats
         GROUP BY reservation_id HAVING SUM(price) > 0) t ON t.reservation_id = r.id
 WHERE r.status = 'CONFIRMED' AND r.hold_expires_at IS NOT NULL;
