-- An owner invites an account to the organizer with a role; the invitee
-- accepts or declines it in the page (issue 60). A pending invitation
-- lapses at `expires_at` (the database's clock).
CREATE TABLE organizer_invitations (
    id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    organizer_id BIGINT UNSIGNED NOT NULL,
    -- The invitee.
    user_id      BIGINT UNSIGNED NOT NULL,
    role         VARCHAR(16) NOT NULL,
    -- The concerts the role will cover, comma-separated; NULL: every one.
    concert_ids  TEXT NULL,
    invited_by   BIGINT UNSIGNED NULL,
    status       VARCHAR(16) NOT NULL DEFAULT 'PENDING',
    created_at   DATETIME(6) NOT NULL,
    expires_at   DATETIME(6) NOT NULL,
    decided_at   DATETIME(6) NULL,
    PRIMARY KEY (id),
    -- An invitee's pending invitations, for their page.
    INDEX idx_organizer_invitations_user (user_id, status),
    INDEX idx_organizer_invitations_organizer (organizer_id, status),
    CONSTRAINT fk_organizer_invitations_organizer FOREIGN KEY (organizer_id) REFERENCES organizers (id),
    CONSTRAINT fk_organizer_invitations_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
    CONSTRAINT fk_organizer_invitations_by FOREIGN KEY (invited_by) REFERENCES users (id) ON DELETE SET NULL,
    CONSTRAINT ck_organizer_invitations_role
        CHECK (role IN ('OWNER', 'MANAGER', 'BOX_OFFICE', 'DOOR', 'FINANCE')),
    CONSTRAINT ck_organizer_invitations_status
        CHECK (status IN ('PENDING', 'ACCEPTED', 'DECLINED', 'REVOKED'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
