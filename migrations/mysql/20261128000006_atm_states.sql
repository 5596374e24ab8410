-- ATMs as they are now (issue 45): each ATM's state, as its newest state event gave it,
-- and the ids of the state events applied or superseded, kept a day so that a resent
-- event is known. `atm_id` is the OBIE Identification; times in microseconds.
-- `unavailable` the services' bits (AtmService::bit, crates/domain/src/atm.rs).
CREATE TABLE atm_states (
    atm_id           VARCHAR(35)  NOT NULL PRIMARY KEY,
    state            VARCHAR(16)  NOT NULL CHECK (state IN ('InService', 'OutOfService')),
    unavailable      BIGINT       NOT NULL,
    reason           VARCHAR(140) NULL,
    expected_back_at BIGINT       NULL,
    since            BIGINT       NOT NULL,
    heard_at         BIGINT       NOT NULL,
    heard_event_id   VARCHAR(64)  NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

CREATE TABLE atm_state_events (
    event_id    VARCHAR(64) NOT NULL PRIMARY KEY,
    atm_id      VARCHAR(35) NOT NULL,
    at_micros   BIGINT      NOT NULL,
    system_id   VARCHAR(64) NOT NULL,
    received_at BIGINT      NOT NULL,
    KEY atm_state_events_by_time (at_micros)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- Each apply that changed a state rewrites this one row, and its trigger moves the
-- `atm_states` counter (as queue_log does for the queue events).
CREATE TABLE atm_state_log (
    id          INT    NOT NULL PRIMARY KEY CHECK (id = 1),
    received_at BIGINT NOT NULL
) ENGINE = InnoDB;
INSERT INTO atm_state_log (id, received_at) VALUES (1, 0);
INSERT INTO change_log (topic, revision) VALUES ('atm_states', 0);
CREATE TRIGGER atm_states_changed AFTER UPDATE ON atm_state_log FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'atm_states';
