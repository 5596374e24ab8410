-- Imports run against this store (atms import, waittimes import), counted by what they
-- loaded and how they ended, for the metrics every instance serves.
CREATE TABLE import_runs (
    kind    TEXT   NOT NULL,
    outcome TEXT   NOT NULL,
    runs    BIGINT NOT NULL,
    last_at BIGINT NOT NULL,
    PRIMARY KEY (kind, outcome)
);
