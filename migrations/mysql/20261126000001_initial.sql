-- The service's tables, MariaDB dialect: the same schema as migrations/postgres after its
-- fourth migration, in one step. Times are seconds since the Unix epoch (BIGINT), every
-- integer is BIGINT, every table InnoDB (the only engine whose commits survive a crash).
--
-- Every text is utf8mb4 in MariaDB's binary no-pad collation: compared and sorted byte by
-- byte, as PostgreSQL's "C" and SQLite's BINARY, so the three read back the same rows in
-- the same order. MariaDB's default collations fold case and ignore trailing spaces: two
-- opaque tokens that differ in case, or "A1" and "A1 ", would be one key. A key is a
-- VARCHAR (an index needs a length); with strict mode a longer value is refused, never
-- cut short.

-- Change counters: every instance polls this one small table and reloads a topic only
-- when its counter moved, whoever wrote the change (the service, the CLI, or the bank's
-- own systems with plain SQL). MariaDB's triggers run for each row, in the writer's
-- transaction: a statement that changes n rows moves its topic's counter n times, which
-- is all a reader asks of it (that it moved). MariaDB has no trigger on TRUNCATE.
CREATE TABLE change_log (
    topic    VARCHAR(32) NOT NULL PRIMARY KEY,
    revision BIGINT NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;
INSERT INTO change_log (topic, revision) VALUES
    ('clients', 0), ('access', 0), ('wait_times', 0), ('revocations', 0), ('signing_keys', 0), ('atms', 0);

CREATE TABLE clients (
    client_id       VARCHAR(255) NOT NULL PRIMARY KEY,
    country_code    VARCHAR(255) NOT NULL,
    business_code   VARCHAR(255) NOT NULL,
    channel_id      VARCHAR(255) NOT NULL,
    redirect_uris   MEDIUMTEXT NOT NULL DEFAULT '[]',  -- JSON array of exact-match URIs
    allowed_origins MEDIUMTEXT NOT NULL DEFAULT '[]',  -- JSON array of origins, beside the redirect URIs'
    status          VARCHAR(16) NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    created_at      BIGINT NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;
CREATE TRIGGER clients_inserted AFTER INSERT ON clients FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'clients';
CREATE TRIGGER clients_updated AFTER UPDATE ON clients FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'clients';
CREATE TRIGGER clients_deleted AFTER DELETE ON clients FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'clients';

-- (country, business, channel) combinations supported by the wait-time operation.
CREATE TABLE supported_channels (
    country_code  VARCHAR(255) NOT NULL,
    business_code VARCHAR(255) NOT NULL,
    channel_id    VARCHAR(255) NOT NULL,
    PRIMARY KEY (country_code, business_code, channel_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;
CREATE TRIGGER access_inserted AFTER INSERT ON supported_channels FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'access';
CREATE TRIGGER access_updated AFTER UPDATE ON supported_channels FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'access';
CREATE TRIGGER access_deleted AFTER DELETE ON supported_channels FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'access';

CREATE TABLE branch_wait_times (
    branch_id    VARCHAR(5) NOT NULL PRIMARY KEY CHECK (branch_id REGEXP '^[0-9]{5}$'),
    minutes      BIGINT NOT NULL CHECK (minutes BETWEEN 0 AND 1440),
    estimated_at BIGINT NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;
CREATE TRIGGER wait_times_inserted AFTER INSERT ON branch_wait_times FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'wait_times';
CREATE TRIGGER wait_times_updated AFTER UPDATE ON branch_wait_times FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'wait_times';
CREATE TRIGGER wait_times_deleted AFTER DELETE ON branch_wait_times FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'wait_times';

-- The ATM set: OBIE ATM 2.3 records, replaced whole by each import, with what listings
-- filter and sort on beside each (the bits are AtmService::bit and Accessibility::bit,
-- crates/domain/src/atm.rs). OBIE's BrandName is at most 140 characters and
-- Identification 35.
CREATE TABLE atms (
    brand_name     VARCHAR(255) NOT NULL,
    identification VARCHAR(255) NOT NULL,
    record         MEDIUMTEXT NOT NULL,  -- the record's JSON text, served byte for byte
    services       BIGINT NOT NULL DEFAULT 0,
    accessibility  BIGINT NOT NULL DEFAULT 0,
    latitude       DOUBLE,  -- degrees, with longitude or neither
    longitude      DOUBLE,
    PRIMARY KEY (brand_name, identification)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- One row: when the set was last replaced (the envelope's meta.LastUpdated). An import
-- rewrites it in the same transaction as the rows, so one trigger on that row tells
-- every instance (instead of one per ATM row); its row lock is what two imports take
-- turns on.
CREATE TABLE atm_set (
    id           INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    last_updated BIGINT NOT NULL
) ENGINE = InnoDB;
INSERT INTO atm_set (id, last_updated) VALUES (1, UNIX_TIMESTAMP());
CREATE TRIGGER atms_changed AFTER UPDATE ON atm_set FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'atms';

-- Signing keys: a key is stored (and published) before it signs; it signs from
-- activates_at, and its predecessor's retired_at is that same moment. A revoked key is
-- neither published nor trusted; its row stays, to be listed.
CREATE TABLE signing_keys (
    kid          VARCHAR(255) NOT NULL PRIMARY KEY,
    algorithm    VARCHAR(16) NOT NULL CHECK (algorithm = 'EdDSA'),
    private_key  BLOB NOT NULL,  -- PKCS#8, or sealed with --key-encryption-key-file
    public_key   BLOB NOT NULL,
    created_at   BIGINT NOT NULL,
    activates_at BIGINT NOT NULL,
    retired_at   BIGINT,
    revoked_at   BIGINT,
    -- At most one key without a retirement: MariaDB has no partial index, so a column
    -- that is 1 for that key and NULL for every other carries the unique index (a
    -- unique index holds any number of NULLs).
    current_key  TINYINT AS (CASE WHEN retired_at IS NULL THEN 1 END) PERSISTENT,
    UNIQUE KEY signing_keys_one_current (current_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;
CREATE TRIGGER signing_keys_inserted AFTER INSERT ON signing_keys FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'signing_keys';
CREATE TRIGGER signing_keys_updated AFTER UPDATE ON signing_keys FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'signing_keys';
CREATE TRIGGER signing_keys_deleted AFTER DELETE ON signing_keys FOR EACH ROW
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'signing_keys';

-- Issued tokens, clustered on their jti: token ids are time-ordered (UUIDv7), so each
-- group commit's rows are an append to the table's last pages. Purged in bounded
-- batches by expiry (the index on expires_at).
CREATE TABLE issued_tokens (
    jti            VARCHAR(64) NOT NULL PRIMARY KEY,
    opaque_token   VARCHAR(255) NOT NULL,
    client_id      VARCHAR(255) NOT NULL,
    session_id     VARCHAR(255) NOT NULL,
    issued_at      BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    code_challenge VARCHAR(255),
    revoked_at     BIGINT,
    UNIQUE KEY issued_tokens_by_opaque (opaque_token),
    KEY issued_tokens_by_client (client_id, expires_at),
    KEY issued_tokens_by_expiry (expires_at),
    -- The revoked ones still live, which every instance reads after each revocation
    -- (PostgreSQL and SQLite: a partial index; here NULLs come first and are skipped).
    KEY issued_tokens_revoked (revoked_at, expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;
CREATE TRIGGER revocations_changed AFTER UPDATE ON issued_tokens FOR EACH ROW
    UPDATE change_log SET revision = revision + 1
    WHERE topic = 'revocations' AND NOT (OLD.revoked_at <=> NEW.revoked_at);

-- Imports run against this store (atms import, waittimes import), counted by what they
-- loaded and how they ended, for the metrics every instance serves.
CREATE TABLE import_runs (
    kind    VARCHAR(64) NOT NULL,
    outcome VARCHAR(64) NOT NULL,
    runs    BIGINT NOT NULL,
    last_at BIGINT NOT NULL,
    PRIMARY KEY (kind, outcome)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;
