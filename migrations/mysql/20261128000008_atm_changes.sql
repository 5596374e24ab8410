-- The ATMs' change feed (GET /api/v1/atms/changes, issue 45): every change of what apps
-- are shown of the ATMs, numbered `seq` by its writer under atm_change_log's row (taken
-- last, FOR UPDATE, by every writer that appends), so numbers become visible in commit
-- order. `brand` for upserted and removed; `body` the record (upserted) or the state
-- object (state); `at_micros` when it happened; `written_at` (seconds) when it was
-- appended, which retention goes by. The log row holds the store's identity (cursors of
-- another store are refused), the last number given, and the floor: every change above
-- it is kept. Each append rewrites it, and its trigger moves the `atm_changes` counter.
CREATE TABLE atm_changes (
    seq        BIGINT       NOT NULL PRIMARY KEY,
    brand      VARCHAR(255) NULL,
    atm_id     VARCHAR(35)  NOT NULL,
    kind       VARCHAR(8)   NOT NULL CHECK (kind IN ('upserted', 'removed', 'state')),
    at_micros  BIGINT       NOT NULL,
    written_at BIGINT       NOT NULL,
    body       MEDIUMTEXT   NULL,
    KEY atm_changes_by_write (written_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

CREATE TABLE atm_change_log (
    id       INT         NOT NULL PRIMARY KEY CHECK (id = 1),
    store_id VARCHAR(64) NOT NULL,
    head     BIGINT      NOT NULL,
    floor    BIGINT      NOT NULL
) ENGINE = InnoDB;
INSERT INTO atm_change_log (id, store_id, head, floor) VALUES (1, REPLACE(UUID(), '-', ''), 0, 0);
INSERT INTO change_log (topic, revision) VALUES ('atm_changes', 0);
CREATE TRIGGER atm_changes_appended AFTER UPDATE ON atm_change_log FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'atm_changes';
