-- The ATM set: OBIE ATM 2.3 records, replaced whole by each import.

CREATE TABLE atms (
    brand_name     TEXT NOT NULL,
    identification TEXT NOT NULL,
    record         TEXT NOT NULL,  -- the OBIE ATM 2.3 record, JSON
    PRIMARY KEY (brand_name, identification)
) STRICT, WITHOUT ROWID;

-- One row: when the set was last replaced (the envelope's meta.LastUpdated).
CREATE TABLE atm_set (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    last_updated INTEGER NOT NULL
) STRICT;
INSERT INTO atm_set (id, last_updated) VALUES (1, CAST(strftime('%s', 'now') AS INTEGER));

-- An import rewrites atm_set in the same transaction as the rows, so one trigger on
-- that single row tells the running service (instead of one per ATM row).
INSERT INTO change_log (topic, revision) VALUES ('atms', 0);
CREATE TRIGGER atms_changed AFTER UPDATE ON atm_set BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'atms'; END;
