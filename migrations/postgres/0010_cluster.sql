-- A cluster of nodes on one PostgreSQL database (issue 29; ARCHITECTURE.md, "Cluster").
-- Used only by nodes started with MEMVAULT_NODE_URL; a single node never writes here, and its
-- writes are not fenced. Times here are the database's clock (timestamptz, now() and
-- clock_timestamp()), never a node's, so nodes whose clocks disagree still agree on who is alive.

-- Membership: every node registers and heartbeats; a node whose `expires_at` has passed is dead,
-- and its workspaces may be taken by live nodes.
CREATE TABLE cluster_nodes (
    id            UUID PRIMARY KEY,
    url           TEXT NOT NULL,
    started_at    TIMESTAMPTZ NOT NULL,
    heartbeat_at  TIMESTAMPTZ NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL,
    -- Shutting down: it hands its workspaces over and takes no new ones.
    draining      BOOLEAN NOT NULL DEFAULT FALSE,
    -- Times it came back after being declared dead (paused past its TTL).
    revivals      BIGINT NOT NULL DEFAULT 0
);

-- Ownership: one row per workspace that some node has served. `epoch` grows by one each time
-- the workspace changes hands (the fencing token: a node serves a workspace at the epoch it
-- took it at, and a write is allowed only while the row still names that node).
CREATE TABLE workspace_leases (
    workspace_id  UUID PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
    node_id       UUID NOT NULL,
    epoch         BIGINT NOT NULL,
    acquired_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX workspace_leases_node ON workspace_leases (node_id);

-- Fencing. A node's connections carry its id in the setting `memvault.node`; every write to a
-- workspace's data checks, inside the writing statement's transaction, that the workspace's
-- lease names this node and that this node is alive, and holds a KEY SHARE lock on the lease row
-- until it commits. A takeover locks the row FOR UPDATE first, so it waits for every write in
-- flight under the old owner to commit or roll back; a write that comes after it fails. Without
-- the setting (one node, the command line), writes are not fenced.
CREATE FUNCTION memvault_fence(ws UUID) RETURNS VOID AS $$
DECLARE
    node UUID := NULLIF(current_setting('memvault.node', TRUE), '')::UUID;
BEGIN
    IF node IS NULL OR ws IS NULL THEN
        RETURN;
    END IF;
    PERFORM 1
        FROM workspace_leases l
        JOIN cluster_nodes n ON n.id = l.node_id
        WHERE l.workspace_id = ws AND l.node_id = node AND n.expires_at > clock_timestamp()
        FOR KEY SHARE OF l;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'node % does not hold the lease of workspace %', node, ws
            USING ERRCODE = 'MV001';
    END IF;
END
$$ LANGUAGE plpgsql;

-- Tables with a workspace_id column.
CREATE FUNCTION memvault_fence_row() RETURNS TRIGGER AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM memvault_fence(OLD.workspace_id);
        RETURN OLD;
    END IF;
    PERFORM memvault_fence(NEW.workspace_id);
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

-- Rows keyed by their parent: a document's (TG_ARGV[0] = 'document') or a memory's ('memory').
-- During a cascade the parent is already gone: its own delete was fenced.
CREATE FUNCTION memvault_fence_child_row() RETURNS TRIGGER AS $$
DECLARE
    parent UUID;
BEGIN
    IF COALESCE(current_setting('memvault.node', TRUE), '') = '' THEN
        RETURN COALESCE(NEW, OLD);
    END IF;
    IF TG_ARGV[0] = 'document' THEN
        IF TG_OP = 'DELETE' THEN parent := OLD.document_id; ELSE parent := NEW.document_id; END IF;
        PERFORM memvault_fence((SELECT workspace_id FROM vault_documents WHERE id = parent));
    ELSE
        IF TG_OP = 'DELETE' THEN parent := OLD.memory_id; ELSE parent := NEW.memory_id; END IF;
        PERFORM memvault_fence((SELECT workspace_id FROM memories WHERE id = parent));
    END IF;
    RETURN COALESCE(NEW, OLD);
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER memories_fence BEFORE INSERT OR UPDATE OR DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION memvault_fence_row();
CREATE TRIGGER memory_feedback_fence BEFORE INSERT OR UPDATE OR DELETE ON memory_feedback
    FOR EACH ROW EXECUTE FUNCTION memvault_fence_row();
CREATE TRIGGER memory_jobs_fence BEFORE INSERT OR UPDATE OR DELETE ON memory_jobs
    FOR EACH ROW EXECUTE FUNCTION memvault_fence_row();
CREATE TRIGGER memory_vectors_fence BEFORE INSERT OR UPDATE OR DELETE ON memory_vectors
    FOR EACH ROW EXECUTE FUNCTION memvault_fence_child_row('memory');
CREATE TRIGGER vaults_fence BEFORE INSERT OR UPDATE OR DELETE ON vaults
    FOR EACH ROW EXECUTE FUNCTION memvault_fence_row();
CREATE TRIGGER vault_documents_fence BEFORE INSERT OR UPDATE OR DELETE ON vault_documents
    FOR EACH ROW EXECUTE FUNCTION memvault_fence_row();
CREATE TRIGGER vault_document_blobs_fence BEFORE INSERT OR UPDATE OR DELETE ON vault_document_blobs
    FOR EACH ROW EXECUTE FUNCTION memvault_fence_child_row('document');
CREATE TRIGGER vault_document_text_fence BEFORE INSERT OR UPDATE OR DELETE ON vault_document_text
    FOR EACH ROW EXECUTE FUNCTION memvault_fence_child_row('document');
CREATE TRIGGER vault_document_events_fence BEFORE INSERT OR UPDATE OR DELETE ON vault_document_events
    FOR EACH ROW EXECUTE FUNCTION memvault_fence_child_row('document');
CREATE TRIGGER vault_chunks_fence BEFORE INSERT OR UPDATE OR DELETE ON vault_chunks
    FOR EACH ROW EXECUTE FUNCTION memvault_fence_row();
CREATE TRIGGER vault_memories_fence BEFORE INSERT OR UPDATE OR DELETE ON vault_memories
    FOR EACH ROW EXECUTE FUNCTION memvault_fence_row();
CREATE TRIGGER vault_memory_feedback_fence BEFORE INSERT OR UPDATE OR DELETE ON vault_memory_feedback
    FOR EACH ROW EXECUTE FUNCTION memvault_fence_row();
CREATE TRIGGER vault_evidence_fence BEFORE INSERT OR UPDATE OR DELETE ON vault_evidence
    FOR EACH ROW EXECUTE FUNCTION memvault_fence_child_row('document');

-- A node that takes a workspace rebuilds its indexes from that workspace's rows alone.
CREATE INDEX memories_workspace_current ON memories (workspace_id, seq)
    WHERE is_current AND deleted_at IS NULL;
CREATE INDEX vault_chunks_workspace ON vault_chunks (workspace_id, id);
CREATE INDEX vault_memories_workspace ON vault_memories (workspace_id, id);
