-- Threads (issue 3): the conversation or session a memory was saved from. Memories of one
-- thread in a lane are consecutive turns; search lends each one its neighbours' context.
-- '' when the memory belongs to no thread.
ALTER TABLE memories ADD COLUMN thread TEXT NOT NULL DEFAULT '';
-- The turns of one thread, newest first (`GET /api/memories?thread=`).
CREATE INDEX memories_thread ON memories (workspace_id, scope, thread, seq) WHERE thread <> '';
