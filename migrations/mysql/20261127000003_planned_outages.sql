-- Planned outages operators announce (`outages schedule`), published at
-- /api/v1/discovery/outages and behind the status at /api/v1/discovery/status. Times in
-- Unix seconds; `is_partial` 1 when only part of the service goes.
CREATE TABLE planned_outages (
    id               VARCHAR(64) NOT NULL PRIMARY KEY,
    starts_at        BIGINT NOT NULL,
    duration_seconds BIGINT NOT NULL CHECK (duration_seconds > 0),
    is_partial       BIGINT NOT NULL CHECK (is_partial IN (0, 1)),
    explanation      TEXT NOT NULL,
    scheduled_at     BIGINT NOT NULL,
    KEY planned_outages_by_start (starts_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;
