-- Check-in (issue 31). Door staff scan with a scanner's token, made by an
-- admin for one concert (only its SHA-256 is kept; revocable). Every
-- admission is a row of `check_ins`, and so is every offline scan uploaded; a ticket's own row says whether and where it was admitted,
-- set once by a conditional UPDATE. A scanner that was offline uploads its
-- scans by `scan_id` (idempotent); one that admitted a ticket someone else
-- had admitted is recorded as a CONFLICT: two people went in on one ticket.
CREATE TABLE scanners (
    id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    concert_id  BIGINT UNSIGNED NOT NULL,
    name        VARCHAR(80)     NOT NULL,
    token_hash  CHAR(64)        CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    created_at  DATETIME(6)     NOT NULL,
    revoked_at  DATETIME(6)     NULL,
    PRIMARY KEY (id),
    CONSTRAINT uq_scanners_token UNIQUE (token_hash),
    CONSTRAINT fk_scanners_concert FOREIGN KEY (concert_id) REFERENCES concerts (id),
    INDEX idx_scanners_concert (concert_id, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE check_ins (
    id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    concert_id   BIGINT UNSIGNED NOT NULL,
    ticket_id    BIGINT UNSIGNED NOT NULL,
    scanner_id   BIGINT UNSIGNED NULL,
    -- The scanner's own id of an offline scan: an upload sent twice
    -- records it once. NULL for an online scan.
    scan_id      VARCHAR(64)     NULL,
    gate         VARCHAR(40)     NOT NULL,
    -- ADMITTED (this scan let the holder in, first), CONFLICT (offline:
    -- let in after someone else was), VOID (offline: let in on a ticket
    -- cancelled meanwhile).
    outcome      VARCHAR(10)     NOT NULL,
    -- When the scanner says it scanned (its clock: a record, never a
    -- deadline) and when the server recorded it (the database's clock).
    scanned_at   DATETIME(6)     NOT NULL,
    recorded_at  DATETIME(6)     NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT uq_check_ins_scan UNIQUE (scanner_id, scan_id),
    CONSTRAINT fk_check_ins_ticket FOREIGN KEY (ticket_id) REFERENCES tickets (id),
    CONSTRAINT fk_check_ins_concert FOREIGN KEY (concert_id) REFERENCES concerts (id),
    CONSTRAINT ck_check_ins_outcome CHECK (outcome IN ('ADMITTED', 'CONFLICT', 'VOID')),
    INDEX idx_check_ins_ticket (ticket_id, id),
    INDEX idx_check_ins_concert_outcome (concert_id, outcome)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
