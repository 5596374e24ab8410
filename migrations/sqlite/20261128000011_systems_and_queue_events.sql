-- The bank's own systems (`systems add`; issue 44), the assertions they have used, and
-- the log of the branch queue events they post. Times in Unix seconds, but an event's
-- `at_micros` and `received_at`: microseconds, as `EventTime` keeps them.

-- `jwks` the JWKS document as read, `key_count` how many keys it holds (the domain cannot
-- count them again); `scopes` the space-separated scope string.
CREATE TABLE systems (
    id            TEXT    NOT NULL PRIMARY KEY,
    jwks          TEXT    NOT NULL,
    key_count     INTEGER NOT NULL CHECK (key_count > 0),
    scopes        TEXT    NOT NULL,
    status        TEXT    NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    registered_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- Each assertion (RFC 7523) a system used, until it expires: the key refuses a second use.
CREATE TABLE system_assertions (
    system_id  TEXT    NOT NULL,
    jti        TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (system_id, jti)
) STRICT, WITHOUT ROWID;
CREATE INDEX system_assertions_by_expiry ON system_assertions (expires_at);

-- Every accepted queue event, for a day: `branch_id` the branch's number, `kind` the
-- wire's `type`; `ticket` and `counter` as the kind has them. A resent `event_id` is the
-- same event, never stored twice.
CREATE TABLE queue_events (
    event_id    TEXT    NOT NULL PRIMARY KEY,
    branch_id   INTEGER NOT NULL CHECK (branch_id BETWEEN 0 AND 99999),
    kind        TEXT    NOT NULL CHECK (kind IN ('TicketIssued', 'TicketCalled', 'ServiceEnded',
                                                 'TicketCancelled', 'CounterOpened', 'CounterClosed')),
    at_micros   INTEGER NOT NULL,
    ticket      TEXT,
    counter     TEXT,
    system_id   TEXT    NOT NULL,
    received_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX queue_events_by_receipt ON queue_events (received_at);
CREATE INDEX queue_events_by_time ON queue_events (at_micros);
