-- Revoked signing keys (issue 23): `keys revoke` withdraws a key at once. A revoked key
-- is neither published nor trusted; its row stays, to be listed.
ALTER TABLE signing_keys ADD COLUMN revoked_at BIGINT;
