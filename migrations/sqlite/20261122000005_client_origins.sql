-- Web origins a client's pages may call the API from, beside those of its redirect
-- URIs (issue 11, CORS): a JSON list of origins as browsers write them.
ALTER TABLE clients ADD COLUMN allowed_origins TEXT NOT NULL DEFAULT '[]';
