-- The desk at the venue (issue 60): a BOX_OFFICE member's shift, with the
-- cash it started with, the sales and refunds made on it, and what was
-- counted at its close. Money rows: a shift is never deleted.
CREATE TABLE desk_shifts (
    id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    concert_id    BIGINT UNSIGNED NOT NULL,
    -- The clerk; NULL once their account has gone (the shift stays).
    user_id       BIGINT UNSIGNED NULL,
    -- The concert's currency (NULL: a free concert).
    currency      CHAR(3) CHARACTER SET ascii COLLATE ascii_bin NULL,
    float_amount  BIGINT UNSIGNED NOT NULL,
    -- The clerk while the shift is open, NULL once closed: one open shift
    -- per clerk and concert (NULLs never collide in a unique key).
    open_clerk    BIGINT UNSIGNED NULL,
    opened_at     DATETIME(6) NOT NULL,
    closed_at     DATETIME(6) NULL,
    -- Set at the close: the float and the cash taken less the cash given
    -- back, and what the clerk counted.
    expected_cash BIGINT NULL,
    counted_cash  BIGINT UNSIGNED NULL,
    PRIMARY KEY (id),
    CONSTRAINT uq_desk_shifts_open UNIQUE (concert_id, open_clerk),
    INDEX idx_desk_shifts_user (user_id),
    CONSTRAINT fk_desk_shifts_concert FOREIGN KEY (concert_id) REFERENCES concerts (id),
    CONSTRAINT fk_desk_shifts_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE SET NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- A buyer at the desk: an account of its own that nobody signs in to,
-- made for one desk sale (its request is written as any fan's, behind
-- the line; its tickets go to the address given at the desk, if any).
CREATE TABLE desk_guests (
    user_id    BIGINT UNSIGNED NOT NULL,
    concert_id BIGINT UNSIGNED NOT NULL,
    shift_id   BIGINT UNSIGNED NOT NULL,
    created_at DATETIME(6) NOT NULL,
    PRIMARY KEY (user_id),
    INDEX idx_desk_guests_shift (shift_id),
    CONSTRAINT fk_desk_guests_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
    CONSTRAINT fk_desk_guests_concert FOREIGN KEY (concert_id) REFERENCES concerts (id),
    CONSTRAINT fk_desk_guests_shift FOREIGN KEY (shift_id) REFERENCES desk_shifts (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- Money taken or given back at the desk names its shift and how.
ALTER TABLE payments
    ADD COLUMN shift_id BIGINT UNSIGNED NULL,
    ADD COLUMN desk_method VARCHAR(8) NULL,
    ADD CONSTRAINT fk_payments_shift FOREIGN KEY (shift_id) REFERENCES desk_shifts (id),
    ADD CONSTRAINT ck_payments_desk_method CHECK (desk_method IN ('CASH', 'CARD'));
ALTER TABLE refunds
    ADD COLUMN shift_id BIGINT UNSIGNED NULL,
    ADD COLUMN desk_method VARCHAR(8) NULL,
    ADD CONSTRAINT fk_refunds_shift FOREIGN KEY (shift_id) REFERENCES desk_shifts (id),
    ADD CONSTRAINT ck_refunds_desk_method CHECK (desk_method IN ('CASH', 'CARD'));
