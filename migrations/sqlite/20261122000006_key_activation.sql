-- Pre-published signing keys (issue 11): a key is stored (and published) before it
-- signs; it signs from activates_at, and its predecessor's retired_at is that same
-- moment, decided when the key is stored. Keys stored before signed at once.
ALTER TABLE signing_keys ADD COLUMN activates_at INTEGER;
UPDATE signing_keys SET activates_at = created_at;
