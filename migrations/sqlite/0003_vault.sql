-- Context Vault (issue 4, SQLite): named vaults, documents with their raw bytes, parsed text,
-- status history, chunks with vectors, extracted and curated memories with their evidence.

CREATE TABLE vaults (
    id            BLOB PRIMARY KEY NOT NULL,
    workspace_id  BLOB NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    is_default    BOOLEAN NOT NULL DEFAULT FALSE,
    created_at    INTEGER NOT NULL,
    UNIQUE (workspace_id, name)
);
-- Invariant: at most one default vault per workspace.
CREATE UNIQUE INDEX vaults_one_default ON vaults (workspace_id) WHERE is_default;

CREATE TABLE vault_documents (
    id                BLOB PRIMARY KEY NOT NULL,
    workspace_id      BLOB NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    vault_id          BLOB NOT NULL REFERENCES vaults (id) ON DELETE CASCADE,
    title             TEXT NOT NULL,
    -- What the caller named (`pdf`, `url`, `remote_file`, ...), and how the bytes are parsed.
    source_type       TEXT NOT NULL,
    kind              TEXT NOT NULL,
    scope             TEXT NOT NULL DEFAULT '',
    project           TEXT NOT NULL DEFAULT '',
    source_url        TEXT NULL,
    byte_size         INTEGER NOT NULL DEFAULT 0,
    status            TEXT NOT NULL,
    processing_phase  TEXT NULL,
    -- The last phase whose output is committed: a respawn resumes after it.
    phase_done        TEXT NULL,
    attempts          INTEGER NOT NULL DEFAULT 0,
    error             TEXT NULL,
    total_chunks      INTEGER NOT NULL DEFAULT 0,
    processed_chunks  INTEGER NOT NULL DEFAULT 0,
    chunk_count       INTEGER NOT NULL DEFAULT 0,
    extracted_count   INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    heartbeat_at      INTEGER NULL,
    completed_at      INTEGER NULL
);
CREATE INDEX vault_documents_vault ON vault_documents (workspace_id, vault_id, created_at);
CREATE INDEX vault_documents_unfinished ON vault_documents (created_at)
    WHERE status IN ('pending', 'processing', 'retrying');

-- The upload exactly as received, stored before the 202 is sent.
CREATE TABLE vault_document_blobs (
    document_id  BLOB PRIMARY KEY NOT NULL REFERENCES vault_documents (id) ON DELETE CASCADE,
    bytes        BLOB NOT NULL
);

-- The parse (then OCR) phase's output: the document's sections as JSON.
CREATE TABLE vault_document_text (
    document_id  BLOB PRIMARY KEY NOT NULL REFERENCES vault_documents (id) ON DELETE CASCADE,
    sections     TEXT NOT NULL
);

-- Every status change, with its time (the operator's history of a document).
CREATE TABLE vault_document_events (
    id           BLOB PRIMARY KEY NOT NULL,
    document_id  BLOB NOT NULL REFERENCES vault_documents (id) ON DELETE CASCADE,
    at           INTEGER NOT NULL,
    status       TEXT NOT NULL,
    phase        TEXT NULL,
    attempt      INTEGER NOT NULL,
    message      TEXT NULL
);
CREATE INDEX vault_document_events_document ON vault_document_events (document_id, at);

CREATE TABLE vault_chunks (
    id                  BLOB PRIMARY KEY NOT NULL,
    document_id         BLOB NOT NULL REFERENCES vault_documents (id) ON DELETE CASCADE,
    workspace_id        BLOB NOT NULL,
    vault_id            BLOB NOT NULL,
    scope               TEXT NOT NULL DEFAULT '',
    project             TEXT NOT NULL DEFAULT '',
    chunk_index         INTEGER NOT NULL,
    section_path        TEXT NOT NULL,
    content             TEXT NOT NULL,
    contextual_content  TEXT NOT NULL,
    extracted           BOOLEAN NOT NULL DEFAULT FALSE,
    model               TEXT NULL,
    vector              BLOB NULL,
    created_at          INTEGER NOT NULL,
    -- Invariant: a respawned chunk phase can never duplicate chunks.
    UNIQUE (document_id, chunk_index)
);
CREATE INDEX vault_chunks_lane ON vault_chunks (workspace_id, vault_id, scope);

CREATE TABLE vault_memories (
    id                 BLOB PRIMARY KEY NOT NULL,
    workspace_id       BLOB NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    vault_id           BLOB NOT NULL REFERENCES vaults (id) ON DELETE CASCADE,
    memory_type        TEXT NOT NULL,
    content            TEXT NOT NULL,
    content_hash       TEXT NOT NULL,
    category           TEXT NOT NULL,
    scope              TEXT NOT NULL DEFAULT '',
    project            TEXT NOT NULL DEFAULT '',
    model              TEXT NULL,
    vector             BLOB NULL,
    helpful_count      INTEGER NOT NULL DEFAULT 0,
    not_helpful_count  INTEGER NOT NULL DEFAULT 0,
    flagged_wrong      BOOLEAN NOT NULL DEFAULT FALSE,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
);
-- Invariant: one memory per fact in a vault lane; a second source adds evidence to it.
CREATE UNIQUE INDEX vault_memories_dedup
    ON vault_memories (workspace_id, vault_id, scope, project, memory_type, content_hash);
CREATE INDEX vault_memories_lane ON vault_memories (workspace_id, vault_id, scope, created_at);

CREATE TABLE vault_evidence (
    id           BLOB PRIMARY KEY NOT NULL,
    memory_id    BLOB NOT NULL REFERENCES vault_memories (id) ON DELETE CASCADE,
    document_id  BLOB NOT NULL REFERENCES vault_documents (id) ON DELETE CASCADE,
    chunk_id     BLOB NOT NULL REFERENCES vault_chunks (id) ON DELETE CASCADE,
    quote        TEXT NOT NULL,
    confidence   REAL NOT NULL,
    created_at   INTEGER NOT NULL,
    UNIQUE (memory_id, chunk_id)
);
CREATE INDEX vault_evidence_document ON vault_evidence (document_id);

CREATE TABLE vault_memory_feedback (
    id            BLOB PRIMARY KEY NOT NULL,
    memory_id     BLOB NOT NULL REFERENCES vault_memories (id) ON DELETE CASCADE,
    workspace_id  BLOB NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    rating        TEXT NOT NULL,
    explanation   TEXT NULL,
    created_at    INTEGER NOT NULL
);
CREATE INDEX vault_memory_feedback_memory ON vault_memory_feedback (memory_id);
