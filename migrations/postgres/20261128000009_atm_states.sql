-- ATMs as they are now (issue 45): each ATM's state, as its newest state event gave it,
-- and the ids of the state events applied or superseded, kept a day so that a resent
-- event is known. `atm_id` is the OBIE Identification; times in microseconds.
-- `unavailable` the services' bits (AtmService::bit, crates/domain/src/atm.rs).
CREATE TABLE atm_states (
    atm_id           TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    state            TEXT   NOT NULL CHECK (state IN ('InService', 'OutOfService')),
    unavailable      BIGINT NOT NULL,
    reason           TEXT,
    expected_back_at BIGINT,
    since            BIGINT NOT NULL,
    heard_at         BIGINT NOT NULL,
    heard_event_id   TEXT COLLATE "C" NOT NULL
);

CREATE TABLE atm_state_events (
    event_id    TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    atm_id      TEXT COLLATE "C" NOT NULL,
    at_micros   BIGINT NOT NULL,
    system_id   TEXT COLLATE "C" NOT NULL,
    received_at BIGINT NOT NULL
);
CREATE INDEX atm_state_events_by_time ON atm_state_events (at_micros);

-- Each apply that changed a state rewrites this one row, and its trigger moves the
-- `atm_states` counter, with no notice (as queue_log does for the queue events).
CREATE TABLE atm_state_log (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    received_at BIGINT NOT NULL
);
INSERT INTO atm_state_log (id, received_at) VALUES (1, 0);
INSERT INTO change_log (topic, revision) VALUES ('atm_states', 0);
CREATE TRIGGER atm_states_changed AFTER UPDATE ON atm_state_log
    FOR EACH STATEMENT EXECUTE FUNCTION change_log_count('atm_states');
