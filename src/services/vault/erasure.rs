//! What the vault does around an erasure (the rules are in `services/erasure.rs`): the scope's
//! documents in ingestion stop before the rows go, and what went leaves the indexes after.

use super::{search_error, VaultService};
use crate::error::{Error, Result};
use crate::model::Lane;
use crate::storage::erasure::Erased;

impl VaultService {
    /// Cancels the unfinished documents of `lane`'s scope (they are erased with it).
    pub(crate) async fn cancel_documents_of(&self, lane: &Lane) -> Result<usize> {
        let mut cancelled = 0;
        for unfinished in self.store.unfinished_documents().await? {
            if unfinished.workspace_id != lane.workspace_id {
                continue;
            }
            let Some(document) = self
                .store
                .document(lane.workspace_id, unfinished.id)
                .await?
            else {
                continue;
            };
            if document.scope == lane.scope {
                self.ingestion()?
                    .cancel(document.id)
                    .await
                    .map_err(|e| Error::Unavailable(e.to_string()))?;
                cancelled += 1;
            }
        }
        Ok(cancelled)
    }

    /// After an erasure: the removed chunks and vault memories leave the indexes.
    pub(crate) fn forget_erased(&self, erased: &Erased) -> Result<()> {
        for (lane, chunks, memories) in &erased.vault {
            self.indexes
                .remove(lane, chunks, memories)
                .map_err(search_error)?;
        }
        Ok(())
    }
}
