-- Initial schema. One migration set for MySQL 8.0+ and MariaDB 10.6+:
-- utf8mb4 with a collation both servers know, DATETIME(6) in UTC, named
-- constraints (the API maps unique violations to 409s by these names), and
-- foreign keys without cascades so that deletes are explicit and checked.

CREATE TABLE users (
    id            BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    -- Case-insensitive uniqueness (collation): "Alice" and "alice" are one name.
    nickname      VARCHAR(50)  NOT NULL,
    password_hash VARCHAR(255) NOT NULL,
    role          VARCHAR(16)  NOT NULL DEFAULT 'USER',
    created_at    DATETIME(6)  NOT NULL,
    updated_at    DATETIME(6)  NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT uq_users_nickname UNIQUE (nickname),
    CONSTRAINT ck_users_role CHECK (role IN ('USER', 'ADMIN'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE concerts (
    id           BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    title        VARCHAR(200) NOT NULL,
    venue        VARCHAR(200) NOT NULL,
    concert_date DATETIME(6)  NOT NULL,
    -- Kept in step with seats in the same transactions, so listing concerts
    -- never counts up to 100,000 seat rows per concert.
    seat_count   INT UNSIGNED NOT NULL DEFAULT 0,
    created_at   DATETIME(6)  NOT NULL,
    updated_at   DATETIME(6)  NOT NULL,
    PRIMARY KEY (id),
    -- Newest-first listing.
    INDEX idx_concerts_created (created_at, id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE seats (
    id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    concert_id  BIGINT UNSIGNED NOT NULL,
    seat_number VARCHAR(50) NOT NULL,
    -- Natural order (A2 before A10, Z before AA), computed by the application
    -- from seat_number; binary collation so that byte order is the order.
    sort_key    VARCHAR(80) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    status      VARCHAR(16) NOT NULL DEFAULT 'AVAILABLE',
    created_at  DATETIME(6) NOT NULL,
    updated_at  DATETIME(6) NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT uq_seats_concert_seat_number UNIQUE (concert_id, seat_number),
    CONSTRAINT fk_seats_concert FOREIGN KEY (concert_id) REFERENCES concerts (id),
    CONSTRAINT ck_seats_status CHECK (status IN ('AVAILABLE', 'RESERVED')),
    INDEX idx_seats_concert_order (concert_id, sort_key),
    -- Seat lists filtered by status and the available/reserved counts.
    INDEX idx_seats_concert_status (concert_id, status, sort_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE reservations (
    id                BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    user_id           BIGINT UNSIGNED NOT NULL,
    concert_id        BIGINT UNSIGNED NOT NULL,
    seat_id           BIGINT UNSIGNED NOT NULL,
    status            VARCHAR(16) NOT NULL,
    -- The no-double-booking backstop: NULL unless CONFIRMED, and NULLs never
    -- collide in a UNIQUE index, so at most one CONFIRMED reservation per seat
    -- while any number of CANCELLED ones may follow it (re-booking works).
    confirmed_seat_id BIGINT UNSIGNED GENERATED ALWAYS AS (IF(status = 'CONFIRMED', seat_id, NULL)) STORED,
    created_at        DATETIME(6) NOT NULL,
    updated_at        DATETIME(6) NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT uq_reservations_confirmed_seat UNIQUE (confirmed_seat_id),
    CONSTRAINT fk_reservations_user FOREIGN KEY (user_id) REFERENCES users (id),
    CONSTRAINT fk_reservations_concert FOREIGN KEY (concert_id) REFERENCES concerts (id),
    CONSTRAINT fk_reservations_seat FOREIGN KEY (seat_id) REFERENCES seats (id),
    CONSTRAINT ck_reservations_status CHECK (status IN ('CONFIRMED', 'CANCELLED')),
    INDEX idx_reservations_user (user_id, created_at),
    INDEX idx_reservations_concert_status (concert_id, status)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;

CREATE TABLE reservation_queue (
    id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    user_id         BIGINT UNSIGNED NOT NULL,
    seat_id         BIGINT UNSIGNED NOT NULL,
    status          VARCHAR(16) NOT NULL DEFAULT 'PENDING',
    reservation_id  BIGINT UNSIGNED NULL,
    reason          VARCHAR(32) NULL,
    -- Lease of the worker that claimed the row; a row whose lease ran out is
    -- claimable again, and every completion is fenced by lease_token.
    lease_owner     VARCHAR(64) NULL,
    lease_token     BIGINT UNSIGNED NULL,
    lease_until     DATETIME(6) NULL,
    attempts        INT UNSIGNED NOT NULL DEFAULT 0,
    -- W3C trace context of the request that enqueued the row.
    traceparent     VARCHAR(55) NULL,
    tracestate      VARCHAR(512) NULL,
    idempotency_key VARCHAR(128) NULL,
    -- "One open request per user and seat", enforced by the database.
    open_seat_id    BIGINT UNSIGNED GENERATED ALWAYS AS (IF(status IN ('PENDING', 'PROCESSING'), seat_id, NULL)) STORED,
    created_at      DATETIME(6) NOT NULL,
    updated_at      DATETIME(6) NOT NULL,
    decided_at      DATETIME(6) NULL,
    PRIMARY KEY (id),
    CONSTRAINT uq_queue_open_request UNIQUE (user_id, open_seat_id),
    CONSTRAINT uq_queue_idempotency UNIQUE (user_id, idempotency_key),
    CONSTRAINT fk_queue_user FOREIGN KEY (user_id) REFERENCES users (id),
    CONSTRAINT fk_queue_seat FOREIGN KEY (seat_id) REFERENCES seats (id),
    CONSTRAINT fk_queue_reservation FOREIGN KEY (reservation_id) REFERENCES reservations (id),
    CONSTRAINT ck_queue_status CHECK (status IN ('PENDING', 'PROCESSING', 'SUCCESS', 'FAILED')),
    -- Claiming (oldest PENDING first) and reclaiming expired leases.
    INDEX idx_queue_status_id (status, id),
    INDEX idx_queue_status_lease (status, lease_until),
    INDEX idx_queue_seat (seat_id, status)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_unicode_ci;
