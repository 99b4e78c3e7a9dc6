-- Who did what (issue 60): one entry per operator write, appended in the
-- same transaction as the change it records. The database refuses to
-- change or remove an entry, whoever asks: the application cannot rewrite
-- its own trail. Kept at least as long as the money rows (never swept).
CREATE TABLE audit_entries (
    id             BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    -- The database's clock, in the writing transaction.
    at             DATETIME(6)     NOT NULL,
    organizer_id   BIGINT UNSIGNED NOT NULL,
    -- Null for an organizer's own business (its name, its team).
    concert_id     BIGINT UNSIGNED NULL,
    user_id        BIGINT UNSIGNED NOT NULL,
    -- The member's role then, or ADMIN for the platform's admin.
    role           VARCHAR(16)     NOT NULL,
    action         VARCHAR(64)     NOT NULL,
    -- What was acted on, as "seat 12", "member 7", "refund 3".
    target         VARCHAR(100)    NULL,
    -- {"before": {...}, "after": {...}}: the fields that changed; never a
    -- secret (a code, a token, a password).
    changes        MEDIUMTEXT      NOT NULL,
    request_id     VARCHAR(64)     NULL,
    client_address VARCHAR(45)     NULL,
    PRIMARY KEY (id),
    INDEX idx_audit_organizer (organizer_id, id),
    INDEX idx_audit_concert (organizer_id, concert_id, id),
    INDEX idx_audit_user (organizer_id, user_id, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TRIGGER audit_entries_are_never_changed BEFORE UPDATE ON audit_entries
FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'audit entries are never changed';

CREATE TRIGGER audit_entries_are_never_removed BEFORE DELETE ON audit_entries
FOR EACH ROW SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'audit entries are never removed';
