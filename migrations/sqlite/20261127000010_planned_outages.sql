-- Planned outages operators announce (`outages schedule`), published at
-- /api/v1/discovery/outages and behind the status at /api/v1/discovery/status. Times in
-- Unix seconds; `is_partial` 1 when only part of the service goes.
CREATE TABLE planned_outages (
    id               TEXT    NOT NULL PRIMARY KEY,
    starts_at        INTEGER NOT NULL,
    duration_seconds INTEGER NOT NULL CHECK (duration_seconds > 0),
    is_partial       INTEGER NOT NULL CHECK (is_partial IN (0, 1)),
    explanation      TEXT    NOT NULL,
    scheduled_at     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX planned_outages_by_start ON planned_outages (starts_at);
