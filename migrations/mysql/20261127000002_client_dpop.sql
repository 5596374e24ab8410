-- Whether a client's tokens must be bound to a key of the app's (DPoP, RFC 9449;
-- issue 33): 'optional' (a token request with a proof gets a bound token, one without a
-- bearer token) or 'required' (only bound tokens).
ALTER TABLE clients ADD COLUMN dpop VARCHAR(16) NOT NULL DEFAULT 'optional' CHECK (dpop IN ('optional', 'required'));
