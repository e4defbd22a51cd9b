//! What the Context Vault service answers: vaults, documents and their histories, memories with
//! their citations, a removal's counts and search results, as domain values (no wire format).

use uuid::Uuid;

use crate::model::vault::{Chunk, Document, DocumentEvent, Evidence, VaultMemory, VaultSearchMode};

/// A vault memory with its citations (filtered to its scope), best first; `relevance` in
/// [0, 1] for a search result.
#[derive(Debug, Clone)]
pub struct CitedMemory {
    pub memory: VaultMemory,
    pub evidence: Vec<Evidence>,
    pub relevance: Option<f32>,
}

/// A document and every status change, oldest first.
#[derive(Debug, Clone)]
pub struct DocumentHistory {
    pub document: Document,
    pub history: Vec<DocumentEvent>,
}

/// A document and the memories extracted from it.
#[derive(Debug, Clone)]
pub struct DocumentCitations {
    pub document: Document,
    pub memories: Vec<CitedMemory>,
}

/// A deleted document: memories cited only by it went, those also cited elsewhere stayed.
#[derive(Debug, Clone)]
pub struct DocumentRemoved {
    pub document_id: Uuid,
    pub deleted_memories: i64,
    pub preserved_memories: i64,
}

/// A page of a vault's documents.
#[derive(Debug, Clone)]
pub struct Documents {
    pub documents: Vec<Document>,
    pub total: i64,
    pub has_more: bool,
}

/// A page of a vault's memories.
#[derive(Debug, Clone)]
pub struct VaultMemories {
    pub memories: Vec<CitedMemory>,
    pub total: i64,
    pub has_more: bool,
}

/// A search's passages (with their relevance) and memories, each list best first.
#[derive(Debug, Clone)]
pub struct VaultFound {
    pub mode: VaultSearchMode,
    pub chunks: Vec<(Chunk, f32)>,
    pub memories: Vec<CitedMemory>,
}
