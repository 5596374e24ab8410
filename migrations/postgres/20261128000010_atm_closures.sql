-- ATM closures announced ahead (`atms closure`, issue 45): one per ATM (its OBIE
-- Identification), from 00:00 UTC of `closes_on` (Unix seconds) on. `short_notice` is
-- the reason given for less than 84 days' notice; `removal_fed` 1 once the change feed
-- holds its ATM's removal (written once it is in effect). Any change moves the `atm_closures`
-- counter and notifies: the instances apply closures over the set they hold. Per row:
-- a cancel that removes nothing moves nothing.
CREATE TABLE atm_closures (
    atm_id       TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    closes_on    BIGINT NOT NULL,
    explanation  TEXT   NOT NULL,
    short_notice TEXT,
    announced_at BIGINT NOT NULL,
    removal_fed  BIGINT NOT NULL DEFAULT 0 CHECK (removal_fed IN (0, 1))
);
INSERT INTO change_log (topic, revision) VALUES ('atm_closures', 0);
CREATE TRIGGER atm_closures_changed AFTER INSERT OR UPDATE OR DELETE ON atm_closures
    FOR EACH ROW EXECUTE FUNCTION change_log_bump('atm_closures');
