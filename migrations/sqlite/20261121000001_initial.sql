-- The service's tables, SQLite dialect. Times are seconds since the Unix epoch.

CREATE TABLE clients (
    client_id     TEXT PRIMARY KEY NOT NULL,
    country_code  TEXT NOT NULL,
    business_code TEXT NOT NULL,
    channel_id    TEXT NOT NULL,
    redirect_uris TEXT NOT NULL DEFAULT '[]',  -- JSON array of exact-match URIs
    status        TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    created_at    INTEGER NOT NULL
) STRICT;

-- (country, business, channel) combinations supported by the wait-time operation.
CREATE TABLE supported_channels (
    country_code  TEXT NOT NULL,
    business_code TEXT NOT NULL,
    channel_id    TEXT NOT NULL,
    PRIMARY KEY (country_code, business_code, channel_id)
) STRICT, WITHOUT ROWID;

CREATE TABLE branch_wait_times (
    branch_id    TEXT PRIMARY KEY NOT NULL
                 CHECK (length(branch_id) = 5 AND branch_id NOT GLOB '*[^0-9]*'),
    minutes      INTEGER NOT NULL CHECK (minutes BETWEEN 0 AND 1440),
    estimated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE issued_tokens (
    jti            TEXT PRIMARY KEY NOT NULL,
    opaque_token   TEXT NOT NULL UNIQUE,
    client_id      TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    issued_at      INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    code_challenge TEXT,
    revoked_at     INTEGER
) STRICT;
CREATE INDEX issued_tokens_by_client ON issued_tokens (client_id, expires_at);
CREATE INDEX issued_tokens_revoked ON issued_tokens (expires_at) WHERE revoked_at IS NOT NULL;

CREATE TABLE signing_keys (
    kid          TEXT PRIMARY KEY NOT NULL,
    algorithm    TEXT NOT NULL CHECK (algorithm = 'EdDSA'),
    private_key  BLOB NOT NULL,  -- PKCS#8; protect the database file like a key file
    public_key   BLOB NOT NULL,
    created_at   INTEGER NOT NULL,
    retired_at   INTEGER
) STRICT;
-- At most one current key.
CREATE UNIQUE INDEX signing_keys_one_current ON signing_keys ((retired_at IS NULL)) WHERE retired_at IS NULL;

-- Change counters: the running service polls this one small table and reloads a topic
-- only when its counter moved, whoever wrote the change.
CREATE TABLE change_log (
    topic    TEXT PRIMARY KEY NOT NULL,
    revision INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
INSERT INTO change_log (topic, revision) VALUES
    ('clients', 0), ('access', 0), ('wait_times', 0), ('revocations', 0), ('signing_keys', 0);

CREATE TRIGGER clients_changed_ins AFTER INSERT ON clients BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'clients'; END;
CREATE TRIGGER clients_changed_upd AFTER UPDATE ON clients BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'clients'; END;
CREATE TRIGGER clients_changed_del AFTER DELETE ON clients BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'clients'; END;

CREATE TRIGGER access_changed_ins AFTER INSERT ON supported_channels BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'access'; END;
CREATE TRIGGER access_changed_upd AFTER UPDATE ON supported_channels BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'access'; END;
CREATE TRIGGER access_changed_del AFTER DELETE ON supported_channels BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'access'; END;

CREATE TRIGGER wait_times_changed_ins AFTER INSERT ON branch_wait_times BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'wait_times'; END;
CREATE TRIGGER wait_times_changed_upd AFTER UPDATE ON branch_wait_times BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'wait_times'; END;
CREATE TRIGGER wait_times_changed_del AFTER DELETE ON branch_wait_times BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'wait_times'; END;

CREATE TRIGGER revocations_changed AFTER UPDATE OF revoked_at ON issued_tokens BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'revocations'; END;

CREATE TRIGGER signing_keys_changed_ins AFTER INSERT ON signing_keys BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'signing_keys'; END;
CREATE TRIGGER signing_keys_changed_upd AFTER UPDATE ON signing_keys BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'signing_keys'; END;
CREATE TRIGGER signing_keys_changed_del AFTER DELETE ON signing_keys BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'signing_keys'; END;
