-- Erasure (issue 33). Every version of a scope's memories, by workspace and scope, for erasing
-- an end user's lane (the lane index only holds current, live ones).
CREATE INDEX memories_scope ON memories (workspace_id, scope);
-- Deleted or forgotten memories whose content has not been purged yet (the purge's queue).
CREATE INDEX memories_purge ON memories (deleted_at) WHERE deleted_at IS NOT NULL AND content <> '';
-- The memories a long note was split into (the purge empties a note none of them is live in).
CREATE INDEX memories_origin ON memories (origin_id) WHERE origin_id IS NOT NULL;

-- What was erased, when and by whom, without personal data: the scope only as a hash.
CREATE TABLE erasures (
    id            BLOB PRIMARY KEY NOT NULL,
    workspace_id  BLOB NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    -- `scope` (DELETE /api/scopes/{scope}) or `memory` (POST /api/memories/{id}/erase).
    kind          TEXT NOT NULL,
    -- Hex SHA-256 of "<workspace id>:<scope>".
    scope_hash    TEXT NOT NULL,
    -- The memory id a `memory` erasure named (any version of its chain).
    memory_id     BLOB NULL,
    -- `user` or `key`, and its id.
    actor_kind    TEXT NOT NULL,
    actor_id      BLOB NOT NULL,
    -- What was removed, per kind (a JSON object of counts).
    counts        TEXT NOT NULL,
    at            INTEGER NOT NULL
);
CREATE INDEX erasures_workspace ON erasures (workspace_id, at);
