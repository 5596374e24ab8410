-- ATMs as they are now (issue 45): each ATM's state, as its newest state event gave it,
-- and the ids of the state events applied or superseded, kept a day so that a resent
-- event is known. `atm_id` is the OBIE Identification; times in microseconds.
-- `unavailable` the services' bits (AtmService::bit, crates/domain/src/atm.rs).
CREATE TABLE atm_states (
    atm_id           TEXT    NOT NULL PRIMARY KEY,
    state            TEXT    NOT NULL CHECK (state IN ('InService', 'OutOfService')),
    unavailable      INTEGER NOT NULL,
    reason           TEXT,
    expected_back_at INTEGER,
    since            INTEGER NOT NULL,
    heard_at         INTEGER NOT NULL,
    heard_event_id   TEXT    NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE atm_state_events (
    event_id    TEXT    NOT NULL PRIMARY KEY,
    atm_id      TEXT    NOT NULL,
    at_micros   INTEGER NOT NULL,
    system_id   TEXT    NOT NULL,
    received_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX atm_state_events_by_time ON atm_state_events (at_micros);

-- Each apply that changed a state rewrites this one row, and its trigger moves the
-- `atm_states` counter (as queue_log does for the queue events).
CREATE TABLE atm_state_log (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    received_at INTEGER NOT NULL
) STRICT;
INSERT INTO atm_state_log (id, received_at) VALUES (1, 0);
INSERT INTO change_log (topic, revision) VALUES ('atm_states', 0);
CREATE TRIGGER atm_states_changed AFTER UPDATE ON atm_state_log BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'atm_states'; END;
