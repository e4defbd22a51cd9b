-- OAuth 2.1 for MCP connectors (issue 6): dynamically registered public clients, single-use
-- authorization codes bound to a PKCE challenge, and access and refresh tokens bound to one
-- user and one workspace. Codes and tokens are stored only as their SHA-256.

CREATE TABLE oauth_clients (
    id             TEXT PRIMARY KEY NOT NULL,
    name           TEXT NOT NULL,
    -- A JSON array of the redirect URIs registered; matched exactly.
    redirect_uris  TEXT NOT NULL,
    created_at     BIGINT NOT NULL
);

CREATE TABLE oauth_codes (
    code_hash       TEXT PRIMARY KEY NOT NULL,
    client_id       TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    user_id         UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    workspace_id    UUID NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    redirect_uri    TEXT NOT NULL,
    code_challenge  TEXT NOT NULL,
    -- Space-separated.
    scopes          TEXT NOT NULL,
    resource        TEXT NULL,
    created_at      BIGINT NOT NULL,
    expires_at      BIGINT NOT NULL,
    used_at         BIGINT NULL
);

CREATE TABLE oauth_tokens (
    id            UUID PRIMARY KEY NOT NULL,
    token_hash    TEXT NOT NULL UNIQUE,
    -- Every token issued from one authorization code shares it (refresh rotation).
    family_id     UUID NOT NULL,
    kind          TEXT NOT NULL,
    client_id     TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    user_id       UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    workspace_id  UUID NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    scopes        TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    revoked_at    BIGINT NULL
);
CREATE INDEX oauth_tokens_family ON oauth_tokens (family_id);
