-- The ATMs' change feed (GET /api/v1/atms/changes, issue 45): every change of what apps
-- are shown of the ATMs, numbered `seq` by its writer under atm_change_log's row (taken
-- last, FOR UPDATE, by every writer that appends), so numbers become visible in commit
-- order. `brand` for upserted and removed; `body` the record (upserted) or the state
-- object (state); `at_micros` when it happened; `written_at` (seconds) when it was
-- appended, which retention goes by. The log row holds the store's identity (cursors of
-- another store are refused), the last number given, and the floor: every change above
-- it is kept. Each append rewrites it; its trigger moves `atm_changes`, with no notice
-- (state changes come hundreds a second).
CREATE TABLE atm_changes (
    seq        BIGINT PRIMARY KEY,
    brand      TEXT COLLATE "C",
    atm_id     TEXT COLLATE "C" NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('upserted', 'removed', 'state')),
    at_micros  BIGINT NOT NULL,
    written_at BIGINT NOT NULL,
    body       TEXT
);
CREATE INDEX atm_changes_by_write ON atm_changes (written_at);

CREATE TABLE atm_change_log (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    store_id TEXT   NOT NULL,
    head     BIGINT NOT NULL,
    floor    BIGINT NOT NULL
);
INSERT INTO atm_change_log (id, store_id, head, floor)
    VALUES (1, md5(random()::text || clock_timestamp()::text), 0, 0);
INSERT INTO change_log (topic, revision) VALUES ('atm_changes', 0);
CREATE TRIGGER atm_changes_appended AFTER UPDATE ON atm_change_log
    FOR EACH STATEMENT EXECUTE FUNCTION change_log_count('atm_changes');
