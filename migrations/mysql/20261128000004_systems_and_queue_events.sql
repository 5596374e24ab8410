-- The bank's own systems (`systems add`; issue 44), the assertions they have used, and
-- the log of the branch queue events they post. Times in Unix seconds, but an event's
-- `at_micros` and `received_at`: microseconds, as `EventTime` keeps them.

-- `jwks` the JWKS document as read, `key_count` how many keys it holds (the domain cannot
-- count them again); `scopes` the space-separated scope string.
CREATE TABLE systems (
    id            VARCHAR(64) NOT NULL PRIMARY KEY,
    jwks          MEDIUMTEXT NOT NULL,
    key_count     BIGINT NOT NULL CHECK (key_count > 0),
    scopes        TEXT NOT NULL,
    status        VARCHAR(16) NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    registered_at BIGINT NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- Each assertion (RFC 7523) a system used, until it expires: the key refuses a second use.
CREATE TABLE system_assertions (
    system_id  VARCHAR(64) NOT NULL,
    jti        VARCHAR(255) NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (system_id, jti),
    KEY system_assertions_by_expiry (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- Every accepted queue event, for a day: `branch_id` the branch's number, `kind` the
-- wire's `type`; `ticket` and `counter` as the kind has them. A resent `event_id` is the
-- same event, never stored twice.
CREATE TABLE queue_events (
    event_id    VARCHAR(64) NOT NULL PRIMARY KEY,
    branch_id   INTEGER NOT NULL CHECK (branch_id BETWEEN 0 AND 99999),
    kind        VARCHAR(16) NOT NULL CHECK (kind IN ('TicketIssued', 'TicketCalled', 'ServiceEnded',
                                                     'TicketCancelled', 'CounterOpened', 'CounterClosed')),
    at_micros   BIGINT NOT NULL,
    ticket      VARCHAR(32) NULL,
    counter     VARCHAR(32) NULL,
    system_id   VARCHAR(64) NOT NULL,
    received_at BIGINT NOT NULL,
    KEY queue_events_by_receipt (received_at),
    KEY queue_events_by_time (at_micros)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;
