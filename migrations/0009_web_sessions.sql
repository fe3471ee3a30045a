-- 0009_web_sessions: browser sign-in. A browser signs in once with its
-- API key and gets a session cookie; the session lives here, not in
-- the cookie, so that signing out and revoking the key end it at once
-- in every meterd, and nothing of it sits in one process's memory.
-- Only the SHA-256 of the cookie's token is stored, as for keys: a
-- copy of this table signs no one in.

CREATE TABLE web_sessions (
    session_hash bytea       PRIMARY KEY CHECK (length(session_hash) = 32),
    key_id       bigint      NOT NULL REFERENCES api_keys ON DELETE CASCADE,
    csrf         text        NOT NULL CHECK (csrf ~ '^[0-9a-f]{64}$'),
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL CHECK (expires_at > created_at)
);
COMMENT ON TABLE web_sessions IS
    'browser sessions: a cookie''s token signs in as the key it was '
    'created with, until it expires, is signed out, or the key is revoked';
COMMENT ON COLUMN web_sessions.session_hash IS
    'SHA-256 of the cookie''s random token; the token itself is never stored';
COMMENT ON COLUMN web_sessions.key_id IS
    'the API key the browser signed in with: the session has its role and '
    'account, and ends when it is revoked or deleted';
COMMENT ON COLUMN web_sessions.csrf IS
    'the session''s CSRF token (64 hex digits): forms and X-CSRF-Token must '
    'carry it on every request that changes something';
COMMENT ON COLUMN web_sessions.created_at IS 'when the browser signed in';
COMMENT ON COLUMN web_sessions.expires_at IS
    'when the session ends (meterd --session-ttl after sign-in); expired rows '
    'authenticate nothing and are deleted at later sign-ins';

-- A key's sessions, for the cascade and for ending them at revocation.
CREATE INDEX web_sessions_key ON web_sessions (key_id);
-- The expired ones, which each sign-in deletes a batch of.
CREATE INDEX web_sessions_expires ON web_sessions (expires_at);
