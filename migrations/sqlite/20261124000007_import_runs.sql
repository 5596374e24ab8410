-- Imports run against this store (atms import, waittimes import), counted by what they
-- loaded and how they ended, for the metrics every instance serves.
CREATE TABLE import_runs (
    kind    TEXT    NOT NULL,
    outcome TEXT    NOT NULL,
    runs    INTEGER NOT NULL,
    last_at INTEGER NOT NULL,
    PRIMARY KEY (kind, outcome)
) WITHOUT ROWID;
