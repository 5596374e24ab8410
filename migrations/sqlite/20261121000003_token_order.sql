-- Issued tokens keyed by their jti alone. Token ids are time-ordered (UUIDv7), so a
-- table clustered on them takes each batch of new tokens as an append to its last
-- pages, where the rowid table had a second B-tree for the jti written at random
-- places: under load that random index was most of what a group commit wrote.

CREATE TABLE issued_tokens_by_jti (
    jti            TEXT PRIMARY KEY NOT NULL,
    opaque_token   TEXT NOT NULL UNIQUE,
    client_id      TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    issued_at      INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    code_challenge TEXT,
    revoked_at     INTEGER
) STRICT, WITHOUT ROWID;

INSERT INTO issued_tokens_by_jti
    SELECT jti, opaque_token, client_id, session_id, issued_at, expires_at, code_challenge, revoked_at
    FROM issued_tokens;

-- Dropping the table drops its indexes and its trigger; both are made again below.
DROP TABLE issued_tokens;
ALTER TABLE issued_tokens_by_jti RENAME TO issued_tokens;

CREATE INDEX issued_tokens_by_client ON issued_tokens (client_id, expires_at);
CREATE INDEX issued_tokens_revoked ON issued_tokens (expires_at) WHERE revoked_at IS NOT NULL;
CREATE TRIGGER revocations_changed AFTER UPDATE OF revoked_at ON issued_tokens BEGIN
    UPDATE change_log SET revision = revision + 1 WHERE topic = 'revocations'; END;
