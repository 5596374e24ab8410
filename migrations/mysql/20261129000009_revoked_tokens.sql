-- Fewer indexes on issued_tokens, the table every token request writes (issue 46): on
-- Galera each index entry is written by every node, so each one costs three times. Two
-- go, leaving the primary key, the opaque token's and the client's:
-- * issued_tokens_revoked: InnoDB has no partial index, so every new token entered it
--   (revoked_at NULL) only for the few that are ever revoked. The revoked ones still
--   live are kept in revoked_tokens below instead, which a trigger fills when a token's
--   revoked_at is set (a revocation, or a copy of a revoked record) and empties when it
--   is cleared, in the same transaction.
-- * issued_tokens_by_expiry: the purge goes client by client on issued_tokens_by_client
--   (client_id, expires_at), and a copy of the live records (`store copy`) reads the
--   table through.
-- Dropping an index changes only the table's definition (MariaDB drops it in place); on
-- Galera the statement runs on every node in the same order.
CREATE TABLE revoked_tokens (
    jti        VARCHAR(64) NOT NULL PRIMARY KEY,
    expires_at BIGINT      NOT NULL,
    KEY revoked_tokens_by_expiry (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- The trigger is replaced in one statement, before the copy: a revocation by an instance
-- still serving while this runs is counted and kept, whichever comes first.
CREATE OR REPLACE TRIGGER revocations_changed AFTER UPDATE ON issued_tokens FOR EACH ROW
BEGIN
    IF NOT (OLD.revoked_at <=> NEW.revoked_at) THEN
        UPDATE change_log SET revision = revision + 1 WHERE topic = 'revocations';
    END IF;
    IF NEW.revoked_at IS NOT NULL THEN
        INSERT INTO revoked_tokens (jti, expires_at) VALUES (NEW.jti, NEW.expires_at)
            ON DUPLICATE KEY UPDATE expires_at = NEW.expires_at;
    ELSEIF OLD.revoked_at IS NOT NULL THEN
        DELETE FROM revoked_tokens WHERE jti = OLD.jti;
    END IF;
END;
INSERT INTO revoked_tokens (jti, expires_at)
    SELECT jti, expires_at FROM issued_tokens WHERE revoked_at IS NOT NULL
    ON DUPLICATE KEY UPDATE expires_at = VALUES(expires_at);

ALTER TABLE issued_tokens DROP INDEX issued_tokens_revoked, DROP INDEX issued_tokens_by_expiry;
