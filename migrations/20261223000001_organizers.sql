-- Organizers own concerts; their members hold one role each (issue 60).
-- An installation's existing concerts move to one default organizer, and
-- its admins become that organizer's owners, so nothing existing breaks.
CREATE TABLE organizers (
    id         BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    name       VARCHAR(100) NOT NULL,
    -- Lower-case letters, digits and hyphens; unique whatever the case.
    slug       VARCHAR(50)  NOT NULL,
    created_at DATETIME(6)  NOT NULL,
    updated_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT uq_organizers_slug UNIQUE (slug)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE organizer_members (
    organizer_id BIGINT UNSIGNED NOT NULL,
    user_id      BIGINT UNSIGNED NOT NULL,
    role         VARCHAR(16) NOT NULL,
    -- 1: the role covers only the concerts listed in member_concerts.
    limited      TINYINT(1) NOT NULL DEFAULT 0,
    created_at   DATETIME(6) NOT NULL,
    updated_at   DATETIME(6) NOT NULL,
    PRIMARY KEY (organizer_id, user_id),
    -- A caller's organizers, for the switcher and every permission check.
    INDEX idx_organizer_members_user (user_id, organizer_id),
    CONSTRAINT fk_organizer_members_organizer FOREIGN KEY (organizer_id) REFERENCES organizers (id),
    CONSTRAINT fk_organizer_members_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE,
    CONSTRAINT ck_organizer_members_role
        CHECK (role IN ('OWNER', 'MANAGER', 'BOX_OFFICE', 'DOOR', 'FINANCE'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

-- The concerts a limited member's role covers.
CREATE TABLE member_concerts (
    organizer_id BIGINT UNSIGNED NOT NULL,
    user_id      BIGINT UNSIGNED NOT NULL,
    concert_id   BIGINT UNSIGNED NOT NULL,
    PRIMARY KEY (organizer_id, user_id, concert_id),
    INDEX idx_member_concerts_concert (concert_id),
    CONSTRAINT fk_member_concerts_member FOREIGN KEY (organizer_id, user_id)
        REFERENCES organizer_members (organizer_id, user_id) ON DELETE CASCADE,
    CONSTRAINT fk_member_concerts_concert FOREIGN KEY (concert_id) REFERENCES concerts (id) ON DELETE CASCADE
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

INSERT INTO organizers (id, name, slug, created_at, updated_at)
VALUES (1, 'Box office', 'box-office', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6));

INSERT INTO organizer_members (organizer_id, user_id, role, limited, created_at, updated_at)
SELECT 1, id, 'OWNER', 0, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) FROM users WHERE role = 'ADMIN';

ALTER TABLE concerts ADD COLUMN organizer_id BIGINT UNSIGNED NOT NULL DEFAULT 1 AFTER id;
ALTER TABLE concerts ADD CONSTRAINT fk_concerts_organizer FOREIGN KEY (organizer_id) REFERENCES organizers (id);
ALTER TABLE concerts ADD INDEX idx_concerts_organizer (organizer_id, id);
