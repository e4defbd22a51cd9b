//! The ingestion queue: documents wait per workspace, and workspaces take turns (round-robin),
//! so one tenant's thousand uploads or hostile files cannot keep another tenant's small document
//! waiting. Pure: the supervisor owns one and asks it what to start next.

use std::collections::{HashMap, VecDeque};

use uuid::Uuid;

/// A document waiting to run: which generation it will be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queued {
    pub workspace: Uuid,
    pub id: Uuid,
    pub attempt: u32,
}

#[derive(Debug, Default)]
pub struct FairQueue {
    /// Workspaces with waiting documents, in turn order.
    turns: VecDeque<Uuid>,
    waiting: HashMap<Uuid, VecDeque<(Uuid, u32)>>,
    len: usize,
}

impl FairQueue {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn contains(&self, id: Uuid) -> bool {
        self.waiting
            .values()
            .any(|docs| docs.iter().any(|(queued, _)| *queued == id))
    }

    /// Queues a document behind its workspace's others; a workspace that had none joins the
    /// end of the turns.
    pub fn push(&mut self, item: Queued) {
        let docs = self.waiting.entry(item.workspace).or_default();
        if docs.is_empty() {
            self.turns.push_back(item.workspace);
        }
        docs.push_back((item.id, item.attempt));
        self.len += 1;
    }

    /// Takes a document out of the queue; `false` when it was not there.
    pub fn remove(&mut self, id: Uuid) -> bool {
        let Some((&workspace, docs)) = self
            .waiting
            .iter_mut()
            .find(|(_, docs)| docs.iter().any(|(queued, _)| *queued == id))
        else {
            return false;
        };
        docs.retain(|(queued, _)| *queued != id);
        self.len -= 1;
        if docs.is_empty() {
            self.waiting.remove(&workspace);
            self.turns.retain(|w| *w != workspace);
        }
        true
    }

    /// Takes every document of a workspace out of the queue; returns how many.
    pub fn remove_workspace(&mut self, workspace: Uuid) -> usize {
        let removed = self.waiting.remove(&workspace).map_or(0, |docs| docs.len());
        self.turns.retain(|w| *w != workspace);
        self.len -= removed;
        removed
    }

    /// The next document to start: the first workspace in turn order that runs fewer than
    /// `per_workspace` documents (`running` counts them) gives its oldest document and goes to
    /// the end of the turns.
    pub fn next(&mut self, running: &HashMap<Uuid, usize>, per_workspace: usize) -> Option<Queued> {
        let per_workspace = per_workspace.max(1);
        let turn = self
            .turns
            .iter()
            .position(|w| running.get(w).copied().unwrap_or(0) < per_workspace)?;
        let workspace = self.turns.remove(turn)?;
        let docs = self.waiting.get_mut(&workspace)?;
        let (id, attempt) = docs.pop_front()?;
        self.len -= 1;
        if docs.is_empty() {
            self.waiting.remove(&workspace);
        } else {
            self.turns.push_back(workspace);
        }
        Some(Queued {
            workspace,
            id,
            attempt,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<Uuid> {
        (0..n).map(|_| Uuid::new_v4()).collect()
    }

    fn push(queue: &mut FairQueue, workspace: Uuid, id: Uuid) {
        queue.push(Queued {
            workspace,
            id,
            attempt: 1,
        });
    }

    #[test]
    fn workspaces_take_turns_whatever_their_backlog() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let mut queue = FairQueue::default();
        let many = ids(1000);
        for id in &many {
            push(&mut queue, a, *id);
        }
        let small = Uuid::new_v4();
        push(&mut queue, b, small);
        assert_eq!(queue.len(), 1001);
        let running = HashMap::new();
        assert_eq!(queue.next(&running, 10).unwrap().id, many[0]);
        // B's only document comes second, not 1001st.
        assert_eq!(queue.next(&running, 10).unwrap().id, small);
        assert_eq!(queue.next(&running, 10).unwrap().id, many[1]);
        assert_eq!(queue.len(), 998);
    }

    #[test]
    fn a_workspace_at_its_cap_is_skipped_not_blocking() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let mut queue = FairQueue::default();
        let docs = ids(3);
        push(&mut queue, a, docs[0]);
        push(&mut queue, b, docs[1]);
        push(&mut queue, a, docs[2]);
        let running = HashMap::from([(a, 2)]);
        assert_eq!(queue.next(&running, 2).unwrap().id, docs[1]);
        // Only A is left, and A is at its cap: nothing starts.
        assert_eq!(queue.next(&running, 2), None);
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.next(&HashMap::new(), 2).unwrap().id, docs[0]);
    }

    #[test]
    fn removal_keeps_the_counts_and_the_turns() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let mut queue = FairQueue::default();
        let docs = ids(3);
        push(&mut queue, a, docs[0]);
        push(&mut queue, b, docs[1]);
        push(&mut queue, b, docs[2]);
        assert!(queue.contains(docs[0]));
        assert!(queue.remove(docs[0]));
        assert!(!queue.remove(docs[0]));
        assert!(!queue.contains(docs[0]));
        assert_eq!(queue.len(), 2);
        let running = HashMap::new();
        assert_eq!(queue.next(&running, 1).unwrap().id, docs[1]);
        assert_eq!(queue.next(&running, 1).unwrap().id, docs[2]);
        assert!(queue.is_empty());
        assert_eq!(queue.next(&running, 1), None);
    }

    #[test]
    fn a_released_workspace_leaves_the_queue_and_its_turn() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let mut queue = FairQueue::default();
        let docs = ids(3);
        push(&mut queue, a, docs[0]);
        push(&mut queue, b, docs[1]);
        push(&mut queue, a, docs[2]);
        assert_eq!(queue.remove_workspace(a), 2);
        assert_eq!(queue.remove_workspace(a), 0);
        assert_eq!(queue.len(), 1);
        let next = queue.next(&HashMap::new(), 1).unwrap();
        assert_eq!((next.workspace, next.id), (b, docs[1]));
        assert!(queue.is_empty() && queue.next(&HashMap::new(), 1).is_none());
    }
}
