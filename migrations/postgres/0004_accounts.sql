-- Accounts (issue 5, SQLite): users with argon2id password hashes, sessions (only the token's
-- SHA-256 is stored), workspace members with roles, invitations (single-use tokens, hashed),
-- API keys gain the role they act with and the user who made them, subscriptions and the
-- billing provider's state, local checkout sessions, and the webhook ids already applied.

CREATE TABLE users (
    id             UUID PRIMARY KEY NOT NULL,
    -- Lower-cased and trimmed; the unique index makes sign-up races safe.
    email          TEXT NOT NULL UNIQUE,
    name           TEXT NOT NULL,
    image          TEXT NULL,
    password_hash  TEXT NOT NULL,
    created_at     BIGINT NOT NULL
);

CREATE TABLE sessions (
    id          UUID PRIMARY KEY NOT NULL,
    user_id     UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash  TEXT NOT NULL UNIQUE,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    revoked_at  BIGINT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE workspace_members (
    id            UUID PRIMARY KEY NOT NULL,
    workspace_id  UUID NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id       UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role          TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    UNIQUE (workspace_id, user_id)
);
CREATE INDEX workspace_members_user ON workspace_members (user_id, created_at);

CREATE TABLE invitations (
    id            UUID PRIMARY KEY NOT NULL,
    workspace_id  UUID NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    email         TEXT NOT NULL,
    role          TEXT NOT NULL,
    token_hash    TEXT NOT NULL UNIQUE,
    invited_by    UUID NULL REFERENCES users (id) ON DELETE SET NULL,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    accepted_at   BIGINT NULL,
    revoked_at    BIGINT NULL
);
CREATE INDEX invitations_workspace ON invitations (workspace_id, created_at);

-- Keys made by the command line have no user and act as owner.
ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'owner';
ALTER TABLE api_keys ADD COLUMN created_by UUID NULL REFERENCES users (id) ON DELETE SET NULL;

CREATE TABLE subscriptions (
    workspace_id              UUID PRIMARY KEY NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    id                        UUID NOT NULL UNIQUE,
    -- The user who pays (the owner who last changed the plan); NULL for the command line.
    user_id                   UUID NULL REFERENCES users (id) ON DELETE SET NULL,
    status                    TEXT NOT NULL,
    provider                  TEXT NOT NULL,
    provider_customer_id      TEXT NULL,
    provider_subscription_id  TEXT NULL UNIQUE,
    renews_at                 BIGINT NULL,
    cancelled_at              BIGINT NULL,
    created_at                BIGINT NOT NULL,
    updated_at                BIGINT NOT NULL
);

CREATE TABLE checkout_sessions (
    id            UUID PRIMARY KEY NOT NULL,
    workspace_id  UUID NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id       UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    plan          TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    completed_at  BIGINT NULL
);

CREATE TABLE billing_webhooks (
    webhook_id   TEXT PRIMARY KEY NOT NULL,
    kind         TEXT NOT NULL,
    received_at  BIGINT NOT NULL
);
