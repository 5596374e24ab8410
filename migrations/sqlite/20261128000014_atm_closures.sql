-- ATM closures announced ahead (`atms closure`, issue 45): one per ATM (its OBIE
-- Identification), from 00:00 UTC of `closes_on` (Unix seconds) on. `short_notice` is
-- the reason given for less than 84 days' notice; `removal_fed` 1 once the change feed
-- holds its ATM's removal (written once it is in effect). Any change moves the `atm_closures`
-- counter: the instances apply closures over the set they hold.
CREATE TABLE atm_closures (
    atm_id       TEXT    NOT NULL PRIMARY KEY,
    closes_on    INTEGER NOT NULL,
    explanation  TEXT    NOT NULL,
    short_notice TEXT,
    announced_at INTEGER NOT NULL,
    removal_fed  INTEGER NOT NULL DEFAULT 0 CHECK (removal_fed IN (0, 1))
) STRICT, WITHOUT ROWID;
INSERT INTO change_log (topic, revision) VALUES ('atm_closures', 0);
CREATE TRIGGER atm_closures_inserted AFTER INSERT ON atm_closures BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'atm_closures'; END;
CREATE TRIGGER atm_closures_updated AFTER UPDATE ON atm_closures BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'atm_closures'; END;
CREATE TRIGGER atm_closures_deleted AFTER DELETE ON atm_closures BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'atm_closures'; END;
