//! New memories of an import that are decided and indexed but not yet committed: the next lines
//! see them as if they were stored (exact duplicates, neighbours, the fact-update judge), and
//! they are committed together, one transaction for up to [`Pending::CAPACITY`] of them.
//!
//! Indexing before the commit is safe: the search indexes are derived from the database
//! (rebuilt from it at start), every search re-reads its hits from the database, and a memory
//! the commit refuses is removed from the indexes again.

use std::collections::HashMap;

use uuid::Uuid;

use crate::model::{from_micros, to_micros, Lane, Memory, NewMemory};

/// What became of a pending memory at its commit.
#[derive(Debug)]
pub(crate) enum Settled {
    /// Stored as decided.
    Created,
    /// A concurrent save stored the same content first: this is that memory's id.
    Duplicate(Uuid),
    /// Refused as a duplicate whose original was deleted (or could not be read) after.
    Lost,
}

/// The pending memories of one import, and the outcomes of those committed.
#[derive(Default)]
pub(crate) struct Pending {
    new: Vec<NewMemory>,
    /// Each pending memory as the database will return it.
    stored: Vec<Memory>,
    by_id: HashMap<Uuid, usize>,
    /// `(lane, project, content hash)` -> index: the exact-duplicate check.
    by_hash: HashMap<(Lane, String, String), usize>,
    /// Outcomes of the commits so far, in order, until taken.
    settled: Vec<(Uuid, Settled)>,
}

impl Pending {
    /// Most memories one commit carries (as the store's group commit).
    pub const CAPACITY: usize = 64;

    pub fn is_empty(&self) -> bool {
        self.new.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.new.len() >= Self::CAPACITY
    }

    /// Adds a memory (its embedding set) decided to be stored as version 1 of a new chain.
    pub fn push(&mut self, lane: &Lane, hash: String, memory: NewMemory) -> Memory {
        let stored = as_stored(&memory);
        let index = self.new.len();
        self.by_id.insert(memory.id, index);
        self.by_hash
            .insert((lane.clone(), memory.project.clone(), hash), index);
        self.new.push(memory);
        self.stored.push(stored.clone());
        stored
    }

    /// The pending memory with this content in this lane and project.
    pub fn duplicate(&self, lane: &Lane, project: &str, hash: &str) -> Option<&Memory> {
        self.by_hash
            .get(&(lane.clone(), project.to_string(), hash.to_string()))
            .map(|&index| &self.stored[index])
    }

    pub fn get(&self, id: &Uuid) -> Option<&Memory> {
        self.by_id.get(id).map(|&index| &self.stored[index])
    }

    /// Empties the set for a commit: the memories to insert, in order.
    pub fn take(&mut self) -> Vec<NewMemory> {
        self.by_id.clear();
        self.by_hash.clear();
        self.stored.clear();
        std::mem::take(&mut self.new)
    }

    pub fn settle(&mut self, id: Uuid, outcome: Settled) {
        self.settled.push((id, outcome));
    }

    /// The outcomes recorded since the last call.
    pub fn take_settled(&mut self) -> Vec<(Uuid, Settled)> {
        std::mem::take(&mut self.settled)
    }
}

/// The row the insert will return: version 1 of its own chain, current, times at the database's
/// precision (microseconds).
fn as_stored(m: &NewMemory) -> Memory {
    let at = |t: chrono::DateTime<chrono::Utc>| from_micros(to_micros(t));
    Memory {
        id: m.id,
        workspace_id: m.workspace_id,
        user_id: m.user_id.clone(),
        content: m.content.clone(),
        source: m.source,
        category: m.category,
        scope: m.scope.clone(),
        project: m.project.clone(),
        version: 1,
        is_current: true,
        root_id: m.id,
        supersedes_id: None,
        valid_from: m.valid_from.map(at),
        valid_until: m.valid_until.map(at),
        created_at: at(m.created_at),
        updated_at: at(m.created_at),
        flagged_wrong: false,
        helpful_count: 0,
        not_helpful_count: 0,
        origin_id: m.origin_id,
        thread: m.thread.clone(),
        speaker: m.speaker.clone(),
    }
}
