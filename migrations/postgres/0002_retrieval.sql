-- Retrieval (issue 3, PostgreSQL): stored embeddings, the origin of memories split from one note, and the
-- persisted jobs of the long-note (202) path.

-- The note or document a memory was extracted from (graph relation links); NULL for a plain save.
ALTER TABLE memories ADD COLUMN origin_id UUID NULL;

-- One vector per memory, with the model that made it: indexes are rebuilt from here, and a
-- model change is detected (and re-embedded) by comparing `model`.
CREATE TABLE memory_vectors (
    memory_id   UUID PRIMARY KEY NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    model       TEXT NOT NULL,
    dims        BIGINT NOT NULL,
    vector      BYTEA NOT NULL,
    created_at  BIGINT NOT NULL
);

CREATE TABLE memory_jobs (
    id            UUID PRIMARY KEY NOT NULL,
    workspace_id  UUID NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    user_id       TEXT NOT NULL,
    scope         TEXT NOT NULL DEFAULT '',
    state         TEXT NOT NULL,
    request       TEXT NOT NULL,
    result        TEXT NULL,
    error         TEXT NULL,
    attempts      BIGINT NOT NULL DEFAULT 0,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    finished_at   BIGINT NULL
);
CREATE INDEX memory_jobs_unfinished ON memory_jobs (created_at) WHERE finished_at IS NULL;
