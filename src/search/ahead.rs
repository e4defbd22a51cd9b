//! The save path's nearest memories for many new vectors at once (an import batch): found on
//! every core before the batch's lines are saved, then brought up to date line by line.
//!
//! A line's answer must be what [`SearchEngine::nearest`] would find when the line is saved,
//! after the lines before it. [`SearchEngine::nearest_ahead`] records, with each answer, how
//! many slots the lane had; [`SearchEngine::nearest_now`] scores the answer again together with
//! every slot indexed since (this batch's memories, and anything saved meanwhile), with the
//! same filter and the same scores. When a memory of the answer has since left the lane (or no
//! longer passes the filter) and the answer was full, its replacement could be any older
//! memory: the caller searches again.

use std::sync::Arc;

use rayon::prelude::*;

use super::vectors::Slot;
use super::{Filter, LaneIndex, Neighbour, SearchEngine};
use crate::model::Lane;

/// A [`SearchEngine::nearest`] answer taken ahead of time, with what it saw.
#[derive(Debug, Clone)]
pub struct NearestAhead {
    /// The lane index it searched (an index rebuilt since is another one).
    lane: u32,
    /// The lane's slots then: every later one is newer than the answer.
    indexed: usize,
    /// The lane's count of documents retired or refreshed in place then.
    edits: u64,
    k: usize,
    found: Vec<(Slot, f32)>,
    neighbours: Vec<Neighbour>,
}

impl NearestAhead {
    /// The answer as it was found.
    pub fn neighbours(&self) -> &[Neighbour] {
        &self.neighbours
    }
}

/// [`SearchEngine::nearest`]'s answer now, from one taken ahead.
#[derive(Debug, Clone, PartialEq)]
pub struct NearestNow {
    pub neighbours: Vec<Neighbour>,
    /// No memory of the lane was retired or refreshed in place since the answer was taken
    /// ahead: what was read then of its memories (those current then) is still what the index
    /// holds of them.
    pub unedited: bool,
}

impl SearchEngine {
    /// [`SearchEngine::nearest`] for each of `queries` (a lane, a vector, a filter), in
    /// parallel on rayon's pool: CPU work, to run off the async workers. `None` where the lane
    /// has no index yet.
    pub fn nearest_ahead(
        &self,
        queries: &[(Lane, Vec<f32>, Filter)],
        k: usize,
    ) -> Vec<Option<NearestAhead>> {
        queries
            .par_iter()
            .map(|(lane, vector, filter)| {
                let index = self.lane(lane)?;
                let docs = index.docs();
                let accept = |slot: Slot| docs.accepts(slot, filter);
                // The documents' read lock is held through the search: no slot is added
                // meanwhile, and every slot below `indexed` has its vector (both are written
                // under the documents' write lock).
                let found = index.vectors().nearest(vector, k, &accept);
                let neighbours = found
                    .iter()
                    .map(|&(slot, similarity)| Neighbour {
                        id: docs.slots[slot as usize].id,
                        similarity,
                    })
                    .collect();
                Some(NearestAhead {
                    lane: index.number,
                    indexed: docs.slots.len(),
                    edits: docs.edits,
                    k,
                    found,
                    neighbours,
                })
            })
            .collect()
    }

    /// What [`SearchEngine::nearest`] finds now for `vector`, from an answer taken ahead with
    /// the same vector and filter: `None` when that answer cannot be brought up to date (the
    /// lane was rebuilt, or a full answer lost a memory), and the caller searches again.
    pub fn nearest_now(
        &self,
        lane: &Lane,
        vector: &[f32],
        filter: &Filter,
        ahead: &NearestAhead,
    ) -> Option<NearestNow> {
        let index: Arc<LaneIndex> = self.lane(lane)?;
        if index.number != ahead.lane {
            return None;
        }
        let docs = index.docs();
        let accept = |slot: Slot| docs.accepts(slot, filter);
        let vectors = index.vectors();
        let kept = vectors.nearest_of(
            vector,
            ahead.k,
            ahead.found.iter().map(|&(slot, _)| slot),
            &accept,
        );
        if kept.len() < ahead.found.len() && ahead.found.len() >= ahead.k {
            return None;
        }
        let since = ahead.indexed as Slot..docs.slots.len() as Slot;
        let found = vectors.nearest_of(
            vector,
            ahead.k,
            kept.iter().map(|&(slot, _)| slot).chain(since),
            &accept,
        );
        let neighbours = found
            .into_iter()
            .map(|(slot, similarity)| Neighbour {
                id: docs.slots[slot as usize].id,
                similarity,
            })
            .collect();
        Some(NearestNow {
            neighbours,
            unedited: docs.edits == ahead.edits,
        })
    }
}
