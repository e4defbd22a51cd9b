-- memvault spine schema (SQLite). Timestamps are Unix epoch microseconds (INTEGER) in both
-- backends, so that comparisons and ordering are identical; ids are UUIDs.

CREATE TABLE workspaces (
    id          BLOB PRIMARY KEY NOT NULL,
    name        TEXT NOT NULL,
    slug        TEXT NOT NULL UNIQUE,
    plan        TEXT NULL,
    created_at  INTEGER NOT NULL
);

CREATE TABLE api_keys (
    id            BLOB PRIMARY KEY NOT NULL,
    workspace_id  BLOB NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    prefix        TEXT NOT NULL,
    key_hash      TEXT NOT NULL UNIQUE,
    created_at    INTEGER NOT NULL,
    last_used_at  INTEGER NULL,
    revoked_at    INTEGER NULL
);
CREATE INDEX api_keys_workspace ON api_keys (workspace_id);

CREATE TABLE memories (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              BLOB NOT NULL UNIQUE,
    workspace_id    BLOB NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL,
    content         TEXT NOT NULL,
    content_norm    TEXT NOT NULL,
    content_hash    TEXT NOT NULL,
    source          TEXT NOT NULL,
    category        TEXT NOT NULL,
    scope           TEXT NOT NULL DEFAULT '',
    project         TEXT NOT NULL DEFAULT '',
    version         INTEGER NOT NULL,
    is_current      BOOLEAN NOT NULL,
    root_id         BLOB NOT NULL,
    supersedes_id   BLOB NULL,
    valid_from      INTEGER NULL,
    valid_until     INTEGER NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    deleted_at      INTEGER NULL,
    flagged_wrong   BOOLEAN NOT NULL DEFAULT FALSE,
    helpful_count   INTEGER NOT NULL DEFAULT 0,
    not_helpful_count INTEGER NOT NULL DEFAULT 0
);
-- Invariant: at most one current, live version per chain.
CREATE UNIQUE INDEX memories_one_current ON memories (root_id) WHERE is_current AND deleted_at IS NULL;
-- Invariant: no two current, live memories with the same normalised content in one lane.
CREATE UNIQUE INDEX memories_dedup ON memories (workspace_id, scope, project, content_hash)
    WHERE is_current AND deleted_at IS NULL;
-- Pages (ordered by seq) and exact counts of a lane, both answered from the index alone.
CREATE INDEX memories_lane ON memories (workspace_id, scope, seq, valid_until, project, category)
    WHERE is_current AND deleted_at IS NULL;
CREATE INDEX memories_chain ON memories (root_id, version);

CREATE TABLE memory_feedback (
    id            BLOB PRIMARY KEY NOT NULL,
    memory_id     BLOB NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    workspace_id  BLOB NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    rating        TEXT NOT NULL,
    explanation   TEXT NULL,
    created_at    INTEGER NOT NULL
);
CREATE INDEX memory_feedback_memory ON memory_feedback (memory_id);
