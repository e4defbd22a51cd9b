-- memvault spine schema (PostgreSQL). Timestamps are Unix epoch microseconds (BIGINT) in both
-- backends, so that comparisons and ordering are identical; ids are UUIDs.

CREATE TABLE workspaces (
    id          UUID PRIMARY KEY,
    name        TEXT NOT NULL,
    slug        TEXT NOT NULL UNIQUE,
    plan        TEXT NULL,
    created_at  BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id            UUID PRIMARY KEY,
    workspace_id  UUID NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    prefix        TEXT NOT NULL,
    key_hash      TEXT NOT NULL UNIQUE,
    created_at    BIGINT NOT NULL,
    last_used_at  BIGINT NULL,
    revoked_at    BIGINT NULL
);
CREATE INDEX api_keys_workspace ON api_keys (workspace_id);

CREATE TABLE memories (
    seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              UUID NOT NULL UNIQUE,
    workspace_id    UUID NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL,
    content         TEXT NOT NULL,
    content_norm    TEXT NOT NULL,
    content_hash    TEXT NOT NULL,
    source          TEXT NOT NULL,
    category        TEXT NOT NULL,
    scope           TEXT NOT NULL DEFAULT '',
    project         TEXT NOT NULL DEFAULT '',
    version         BIGINT NOT NULL,
    is_current      BOOLEAN NOT NULL,
    root_id         UUID NOT NULL,
    supersedes_id   UUID NULL,
    valid_from      BIGINT NULL,
    valid_until     BIGINT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    deleted_at      BIGINT NULL,
    flagged_wrong   BOOLEAN NOT NULL DEFAULT FALSE,
    helpful_count   BIGINT NOT NULL DEFAULT 0,
    not_helpful_count BIGINT NOT NULL DEFAULT 0
);
-- Invariant: at most one current, live version per chain.
CREATE UNIQUE INDEX memories_one_current ON memories (root_id) WHERE is_current AND deleted_at IS NULL;
-- Invariant: no two current, live memories with the same normalised content in one lane.
CREATE UNIQUE INDEX memories_dedup ON memories (workspace_id, scope, project, content_hash)
    WHERE is_current AND deleted_at IS NULL;
-- Pages (ordered by seq) and exact counts of a lane, both answered from the index alone.
CREATE INDEX memories_lane ON memories (workspace_id, scope, seq) INCLUDE (valid_until, project, category)
    WHERE is_current AND deleted_at IS NULL;
CREATE INDEX memories_chain ON memories (root_id, version);

CREATE TABLE memory_feedback (
    id            UUID PRIMARY KEY,
    memory_id     UUID NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    workspace_id  UUID NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    rating        TEXT NOT NULL,
    explanation   TEXT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX memory_feedback_memory ON memory_feedback (memory_id);
