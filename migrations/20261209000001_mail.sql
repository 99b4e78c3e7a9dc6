-- Mail (issue 31). A user may give an address (optional: no address, no
-- mail). A mail follows an event of the outbox and is written in the
-- event's transaction, for a fan with an address then: the order with its
-- tickets when a reservation is confirmed, a reminder before a hold ends,
-- an offer from a waiting list. The workers send it at least once, under a
-- lease, as they deliver webhooks; its Message-ID is made from the
-- reservation and the kind (one of each per reservation, by the unique key),
-- so that a message sent again is recognisable as the same one.
ALTER TABLE users
    ADD COLUMN email            VARCHAR(254) NULL,
    -- When the address was last given, changed or removed (the database's
    -- clock): a reservation confirmed since, while it was set, has its mail.
    ADD COLUMN email_changed_at DATETIME(6)  NULL;

CREATE TABLE mails (
    id             BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    concert_id     BIGINT UNSIGNED NOT NULL,
    reservation_id BIGINT UNSIGNED NOT NULL,
    user_id        BIGINT UNSIGNED NOT NULL,
    kind           VARCHAR(24)     NOT NULL,
    created_at     DATETIME(6)     NOT NULL,
    -- When it may be claimed: when it is due, then (claimed) the end of its
    -- claim's lease, then its next attempt; NULL once it has ended. The
    -- claim reads only this, through its index.
    due_at         DATETIME(6)     NULL,
    attempts       INT UNSIGNED    NOT NULL DEFAULT 0,
    lease_token    BIGINT UNSIGNED NULL,
    -- SENT (accepted by the SMTP server), SKIPPED (nothing left to say: a
    -- hold confirmed or run out before its reminder, an order cancelled
    -- before its confirmation, the address removed), FAILED (refused for
    -- good, or not accepted within the retry period).
    outcome        VARCHAR(8)      NULL,
    ended_at       DATETIME(6)     NULL,
    -- Where it went (the fan's address when it was sent).
    recipient      VARCHAR(254)    NULL,
    last_error     VARCHAR(255)    NULL,
    PRIMARY KEY (id),
    CONSTRAINT uq_mails_reservation_kind UNIQUE (reservation_id, kind),
    CONSTRAINT fk_mails_reservation FOREIGN KEY (reservation_id) REFERENCES reservations (id),
    CONSTRAINT ck_mails_kind CHECK (kind IN ('ORDER_CONFIRMATION', 'HOLD_REMINDER', 'WAITING_LIST_OFFER')),
    CONSTRAINT ck_mails_outcome CHECK (outcome IN ('SENT', 'SKIPPED', 'FAILED')),
    CONSTRAINT ck_mails_ended CHECK ((outcome IS NULL) = (ended_at IS NULL)),
    INDEX idx_mails_due (due_at),
    INDEX idx_mails_outcome (outcome, ended_at),
    INDEX idx_mails_concert (concert_id, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
