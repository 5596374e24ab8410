-- Planned outages operators announce (`outages schedule`), published at
-- /api/v1/discovery/outages and behind the status at /api/v1/discovery/status. Times in
-- Unix seconds; `is_partial` 1 when only part of the service goes.
CREATE TABLE planned_outages (
    id               TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    starts_at        BIGINT NOT NULL,
    duration_seconds BIGINT NOT NULL CHECK (duration_seconds > 0),
    is_partial       BIGINT NOT NULL CHECK (is_partial IN (0, 1)),
    explanation      TEXT   NOT NULL,
    scheduled_at     BIGINT NOT NULL
);
CREATE INDEX planned_outages_by_start ON planned_outages (starts_at);
