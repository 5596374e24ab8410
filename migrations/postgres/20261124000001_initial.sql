-- The service's tables, PostgreSQL dialect: the same schema as migrations/sqlite after
-- its sixth migration, in one step. Times are seconds since the Unix epoch (BIGINT, as
-- SQLite's INTEGER), every integer is BIGINT and every text a byte-ordered "C" collation
-- where it is sorted, so both backends read back the same rows in the same order.

-- Change counters: every instance polls this one small table and reloads a topic only
-- when its counter moved, whoever wrote the change (the service, the CLI, or the bank's
-- own systems with plain SQL). Triggers bump a topic's counter once per statement, in
-- the statement's own transaction.
CREATE TABLE change_log (
    topic    TEXT COLLATE "C" PRIMARY KEY,
    revision BIGINT NOT NULL
);
INSERT INTO change_log (topic, revision) VALUES
    ('clients', 0), ('access', 0), ('wait_times', 0), ('revocations', 0), ('signing_keys', 0), ('atms', 0);

CREATE FUNCTION change_log_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = TG_ARGV[0];
    RETURN NULL;
END
$$;

CREATE TABLE clients (
    client_id       TEXT COLLATE "C" PRIMARY KEY,
    country_code    TEXT NOT NULL,
    business_code   TEXT NOT NULL,
    channel_id      TEXT NOT NULL,
    redirect_uris   TEXT NOT NULL DEFAULT '[]',  -- JSON array of exact-match URIs
    allowed_origins TEXT NOT NULL DEFAULT '[]',  -- JSON array of origins, beside the redirect URIs'
    status          TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    created_at      BIGINT NOT NULL
);
CREATE TRIGGER clients_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON clients
    FOR EACH STATEMENT EXECUTE FUNCTION change_log_bump('clients');

-- (country, business, channel) combinations supported by the wait-time operation.
CREATE TABLE supported_channels (
    country_code  TEXT COLLATE "C" NOT NULL,
    business_code TEXT COLLATE "C" NOT NULL,
    channel_id    TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (country_code, business_code, channel_id)
);
CREATE TRIGGER access_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON supported_channels
    FOR EACH STATEMENT EXECUTE FUNCTION change_log_bump('access');

CREATE TABLE branch_wait_times (
    branch_id    TEXT COLLATE "C" PRIMARY KEY CHECK (branch_id ~ '^[0-9]{5}$'),
    minutes      BIGINT NOT NULL CHECK (minutes BETWEEN 0 AND 1440),
    estimated_at BIGINT NOT NULL
);
CREATE TRIGGER wait_times_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON branch_wait_times
    FOR EACH STATEMENT EXECUTE FUNCTION change_log_bump('wait_times');

-- The ATM set: OBIE ATM 2.3 records, replaced whole by each import, with what listings
-- filter and sort on beside each (the bits are AtmService::bit and Accessibility::bit,
-- crates/domain/src/atm.rs).
CREATE TABLE atms (
    brand_name     TEXT COLLATE "C" NOT NULL,
    identification TEXT COLLATE "C" NOT NULL,
    record         TEXT NOT NULL,  -- the record's JSON text, served byte for byte (not jsonb)
    services       BIGINT NOT NULL DEFAULT 0,
    accessibility  BIGINT NOT NULL DEFAULT 0,
    latitude       DOUBLE PRECISION,  -- degrees, with longitude or neither
    longitude      DOUBLE PRECISION,
    PRIMARY KEY (brand_name, identification)
);

-- One row: when the set was last replaced (the envelope's meta.LastUpdated). An import
-- rewrites it in the same transaction as the rows, so one trigger on that row tells
-- every instance (instead of one per ATM row).
CREATE TABLE atm_set (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    last_updated BIGINT NOT NULL
);
INSERT INTO atm_set (id, last_updated) VALUES (1, CAST(EXTRACT(EPOCH FROM now()) AS BIGINT));
CREATE TRIGGER atms_changed AFTER UPDATE ON atm_set
    FOR EACH STATEMENT EXECUTE FUNCTION change_log_bump('atms');

-- Signing keys: a key is stored (and published) before it signs; it signs from
-- activates_at, and its predecessor's retired_at is that same moment.
CREATE TABLE signing_keys (
    kid          TEXT COLLATE "C" PRIMARY KEY,
    algorithm    TEXT NOT NULL CHECK (algorithm = 'EdDSA'),
    private_key  BYTEA NOT NULL,  -- PKCS#8, or sealed with --key-encryption-key-file
    public_key   BYTEA NOT NULL,
    created_at   BIGINT NOT NULL,
    activates_at BIGINT NOT NULL,
    retired_at   BIGINT
);
-- At most one key without a retirement.
CREATE UNIQUE INDEX signing_keys_one_current ON signing_keys ((retired_at IS NULL)) WHERE retired_at IS NULL;
CREATE TRIGGER signing_keys_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON signing_keys
    FOR EACH STATEMENT EXECUTE FUNCTION change_log_bump('signing_keys');

-- Issued tokens, partitioned by the hour they expire in: purging a day-old hour drops
-- its partition (no row-by-row DELETE, no dead rows, almost no WAL), whatever the
-- volume. The service creates the partitions of the coming hours ahead of time
-- (issued_tokens_h<hour start, Unix seconds>); a token outside them lands in the default
-- partition, which is purged row by row. PostgreSQL's unique keys must include the
-- partition key, so jti and opaque_token are unique within an hour of expiry; both are
-- random (a UUIDv7 and 128 bits from the CSPRNG), so no two tokens share one anyway.
CREATE TABLE issued_tokens (
    jti            TEXT COLLATE "C" NOT NULL,
    opaque_token   TEXT COLLATE "C" NOT NULL,
    client_id      TEXT COLLATE "C" NOT NULL,
    session_id     TEXT NOT NULL,
    issued_at      BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    code_challenge TEXT,
    revoked_at     BIGINT,
    PRIMARY KEY (jti, expires_at),
    UNIQUE (opaque_token, expires_at)
) PARTITION BY RANGE (expires_at);
CREATE TABLE issued_tokens_default PARTITION OF issued_tokens DEFAULT;
CREATE INDEX issued_tokens_by_client ON issued_tokens (client_id, expires_at);
CREATE INDEX issued_tokens_revoked ON issued_tokens (expires_at) WHERE revoked_at IS NOT NULL;
CREATE TRIGGER revocations_changed AFTER UPDATE OF revoked_at ON issued_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION change_log_bump('revocations');
