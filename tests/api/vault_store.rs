//! The Context Vault's storage contract (and the memories' batched duplicate lookup), run
//! through `storage::connect` against a fresh database (SQLite, or PostgreSQL with
//! `MEMVAULT_TEST_DATABASE_URL`).

use std::collections::HashSet;
use std::sync::Arc;

use memvault::model::vault::{
    DocumentEvent, MemoryType, NewDocument, Phase, SourceKind, Status, Vault, VaultLane,
    VaultMemoryFilter,
};
use memvault::model::{
    content_hash, normalize, now, to_micros, ApiKey, Category, Embedded, Rating, Workspace,
};
use memvault::storage::vault::NewCompanyFact;
use memvault::storage::{connect, Store};
use memvault_pipelines::model::{ChunkDraft, FactDraft, Section};
use memvault_pipelines::pipeline::{
    ChunkVectors, EmbeddedFact, Progress, StatusChange, StoredChunk,
};
use uuid::Uuid;

use crate::helpers::{fresh_database, test_settings, TestDb};

struct Env {
    store: Arc<dyn Store>,
    workspace_id: Uuid,
    vault: Vault,
    _db: TestDb,
}

async fn add_workspace(store: &Arc<dyn Store>) -> Uuid {
    let id = Uuid::now_v7();
    let created_at = now();
    let workspace = Workspace {
        id,
        name: "Vault Workspace".to_string(),
        slug: format!("vault-{}", id.simple()),
        plan: None,
        created_at,
    };
    let key = ApiKey {
        id: Uuid::now_v7(),
        workspace_id: id,
        name: "default".to_string(),
        prefix: format!("mv_{}", &id.simple().to_string()[..8]),
        role: memvault::model::accounts::Role::Owner,
        created_by: None,
        created_at,
        last_used_at: None,
        revoked_at: None,
    };
    store
        .insert_workspace_with_key(&workspace, &key, &format!("hash-{}", id.simple()))
        .await
        .expect("workspace");
    id
}

async fn setup() -> Env {
    let db = fresh_database().await;
    let settings = test_settings(&db);
    let store = connect(&settings).await.expect("connect");
    let workspace_id = add_workspace(&store).await;
    let vault = store
        .default_vault(workspace_id)
        .await
        .expect("default vault");
    Env {
        store,
        workspace_id,
        vault,
        _db: db,
    }
}

impl Env {
    fn lane(&self, scope: &str) -> VaultLane {
        VaultLane {
            workspace_id: self.workspace_id,
            vault_id: self.vault.id,
            scope: scope.to_string(),
        }
    }

    fn new_document(&self, title: &str, project: &str, created_micros: i64) -> NewDocument {
        NewDocument {
            id: Uuid::now_v7(),
            workspace_id: self.workspace_id,
            vault_id: self.vault.id,
            title: title.to_string(),
            source_type: "markdown".to_string(),
            kind: SourceKind::Markdown,
            scope: String::new(),
            project: project.to_string(),
            source_url: Some(format!("https://example.com/{title}")),
            bytes: format!("# {title}\n\nSome text.").into_bytes(),
            created_at: memvault::model::from_micros(created_micros),
        }
    }

    async fn document(&self, title: &str, project: &str) -> Uuid {
        let new = self.new_document(title, project, to_micros(now()));
        self.store
            .insert_document(&new)
            .await
            .expect("insert document")
            .id
    }

    /// A document with `n` stored chunks (no vectors yet).
    async fn chunked(&self, title: &str, n: u32) -> (Uuid, Vec<StoredChunk>) {
        let id = self.document(title, "").await;
        self.store
            .replace_chunks(id, &drafts(title, n), to_micros(now()))
            .await
            .expect("chunks");
        let chunks = self.store.chunks_without_vectors(id).await.expect("chunks");
        assert_eq!(chunks.len(), n as usize);
        (id, chunks)
    }

    async fn company_fact(&self, content: &str, project: &str, category: Category) -> Uuid {
        let (memory, created) = self
            .store
            .insert_company_fact(&company(self.lane(""), content, project, category))
            .await
            .expect("company fact");
        assert!(created);
        memory.id
    }

    fn filter(&self) -> VaultMemoryFilter {
        VaultMemoryFilter {
            lane: self.lane(""),
            memory_type: None,
            projects: Vec::new(),
            categories: Vec::new(),
            limit: 100,
            offset: 0,
        }
    }
}

fn drafts(title: &str, n: u32) -> Vec<ChunkDraft> {
    (0..n)
        .map(|index| ChunkDraft {
            index,
            section_path: format!("Part {index}"),
            content: format!("{title} chunk {index}"),
            contextual_content: format!("{title} > Part {index}\n\n{title} chunk {index}"),
        })
        .collect()
}

fn fact(content: &str, confidence: f32) -> EmbeddedFact {
    EmbeddedFact {
        fact: FactDraft {
            content: content.to_string(),
            category: "decision".to_string(),
            quote: content.to_string(),
            confidence,
        },
        vector: vec![0.5, -0.25, 1.0],
    }
}

fn company(lane: VaultLane, content: &str, project: &str, category: Category) -> NewCompanyFact {
    NewCompanyFact {
        id: Uuid::now_v7(),
        lane,
        project: project.to_string(),
        content: content.to_string(),
        content_hash: content_hash(&normalize(content)),
        category,
        embedding: Embedded {
            model: Arc::from("test-model"),
            vector: Arc::from(vec![1.0f32, 0.0, 0.0]),
        },
        at_micros: to_micros(now()),
    }
}

fn change(
    status: Status,
    phase: Option<Phase>,
    attempts: u32,
    message: Option<&str>,
) -> StatusChange {
    StatusChange {
        status,
        phase,
        attempts,
        message: message.map(str::to_string),
    }
}

/// Two documents: A's first chunk states X and Y, B's first chunk states X again.
struct Shared {
    a: Uuid,
    b: Uuid,
    a_chunks: Vec<StoredChunk>,
    x: Uuid,
    y: Uuid,
}

async fn shared_fact(env: &Env) -> Shared {
    let (a, a_chunks) = env.chunked("Handbook", 2).await;
    let (b, b_chunks) = env.chunked("Minutes", 2).await;
    let created = env
        .store
        .save_chunk_facts(
            a,
            a_chunks[0].id,
            "test-model",
            &[
                fact("We deploy on Fridays.", 0.6),
                fact("Reviews need two approvals", 0.8),
            ],
            to_micros(now()),
        )
        .await
        .expect("facts of A");
    assert_eq!(created.len(), 2);
    assert!(created
        .iter()
        .all(|m| m.vector.as_deref() == Some(&[0.5, -0.25, 1.0][..])));
    assert!(created
        .iter()
        .all(|m| m.memory.memory_type == MemoryType::Document));
    assert!(created
        .iter()
        .all(|m| m.memory.category == Category::Decision));
    assert!(created
        .iter()
        .all(|m| m.memory.source.as_ref().map(|s| s.id) == Some(a)));
    let x = created[0].memory.id;
    let y = created[1].memory.id;
    // The same fact (normalised) from another document's chunk joins the memory.
    let again = env
        .store
        .save_chunk_facts(
            b,
            b_chunks[0].id,
            "test-model",
            &[fact("we deploy on   FRIDAYS", 0.9)],
            to_micros(now()),
        )
        .await
        .expect("facts of B");
    assert!(again.is_empty(), "no new memory for an equal fact");
    Shared {
        a,
        b,
        a_chunks,
        x,
        y,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_vault_is_created_once_and_stable() {
    let db = fresh_database().await;
    let store = connect(&test_settings(&db)).await.expect("connect");
    let workspace_id = add_workspace(&store).await;
    let (one, two) = tokio::join!(
        store.default_vault(workspace_id),
        store.default_vault(workspace_id)
    );
    let (one, two) = (one.unwrap(), two.unwrap());
    assert_eq!(one, two);
    assert_eq!(one.name, "default");
    assert!(one.is_default);
    assert_eq!(store.default_vault(workspace_id).await.unwrap(), one);
    assert_eq!(
        store.list_vaults(workspace_id).await.unwrap(),
        vec![one.clone()]
    );
    assert_eq!(
        store.vault(workspace_id, one.id).await.unwrap(),
        Some(one.clone())
    );

    let other = Vault {
        id: Uuid::now_v7(),
        workspace_id,
        name: "research".to_string(),
        is_default: false,
        created_at: now(),
    };
    assert!(store.insert_vault(&other).await.unwrap());
    let same_name = Vault {
        id: Uuid::now_v7(),
        ..other.clone()
    };
    assert!(
        !store.insert_vault(&same_name).await.unwrap(),
        "names are unique"
    );
    let vaults = store.list_vaults(workspace_id).await.unwrap();
    assert_eq!(vaults, vec![one.clone(), other.clone()], "oldest first");
    assert_eq!(store.default_vault(workspace_id).await.unwrap(), one);
}

#[tokio::test]
async fn documents_are_stored_read_and_listed_newest_first() {
    let env = setup().await;
    let base = to_micros(now());
    let mut ids = Vec::new();
    for (i, title) in ["first", "second", "third"].iter().enumerate() {
        let new = env.new_document(title, "docs", base + i as i64);
        let document = env.store.insert_document(&new).await.unwrap();
        assert_eq!(document.id, new.id);
        assert_eq!(document.status, Status::Pending);
        assert_eq!(document.attempts, 0);
        assert_eq!(document.byte_size, new.bytes.len() as i64);
        assert_eq!(document.kind, SourceKind::Markdown);
        assert_eq!(document.source_type, "markdown");
        assert_eq!(document.project, "docs");
        assert_eq!(document.created_at, new.created_at);
        assert_eq!(document.phase_done, None);
        assert_eq!(
            env.store.document(env.workspace_id, new.id).await.unwrap(),
            Some(document.clone())
        );
        assert_eq!(
            env.store.document_bytes(new.id).await.unwrap(),
            Some(new.bytes.clone())
        );
        ids.push(new.id);
    }
    let (page, total) = env
        .store
        .list_documents(env.workspace_id, env.vault.id, "", 2, 0)
        .await
        .unwrap();
    assert_eq!(total, 3);
    assert_eq!(
        page.iter().map(|d| d.id).collect::<Vec<_>>(),
        vec![ids[2], ids[1]]
    );
    let (page, total) = env
        .store
        .list_documents(env.workspace_id, env.vault.id, "", 2, 2)
        .await
        .unwrap();
    assert_eq!(total, 3);
    assert_eq!(page.iter().map(|d| d.id).collect::<Vec<_>>(), vec![ids[0]]);

    let events = env.store.document_events(ids[0]).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].status, "pending");
    assert_eq!(events[0].attempt, 0);

    let pipeline = env.store.pipeline_document(ids[0]).await.unwrap().unwrap();
    assert_eq!(pipeline.title, "first");
    assert_eq!(pipeline.kind, SourceKind::Markdown);
    assert_eq!(pipeline.phase_done, None);
    assert!(env
        .store
        .pipeline_document(Uuid::now_v7())
        .await
        .unwrap()
        .is_none());

    let unfinished = env.store.unfinished_documents().await.unwrap();
    assert_eq!(
        unfinished
            .iter()
            .map(|d| (d.id, d.workspace_id, d.status, d.attempts))
            .collect::<Vec<_>>(),
        ids.iter()
            .map(|id| (*id, env.workspace_id, Status::Pending, 0))
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn status_changes_append_history_in_order() {
    let env = setup().await;
    let id = env.document("history", "").await;
    let t = to_micros(now());
    let store = &env.store;
    store
        .set_document_status(id, &change(Status::Processing, None, 1, None), t + 1)
        .await
        .unwrap();
    store
        .set_document_status(
            id,
            &change(
                Status::Retrying,
                Some(Phase::Embed),
                1,
                Some("embedder down"),
            ),
            t + 2,
        )
        .await
        .unwrap();
    let d = store.document(env.workspace_id, id).await.unwrap().unwrap();
    assert_eq!(d.status, Status::Retrying);
    assert_eq!(d.error.as_deref(), Some("embedder down"));
    store
        .set_document_status(id, &change(Status::Processing, None, 2, None), t + 3)
        .await
        .unwrap();
    let d = store.document(env.workspace_id, id).await.unwrap().unwrap();
    assert_eq!(d.status, Status::Processing);
    assert_eq!(d.attempts, 2);
    assert_eq!(
        d.error.as_deref(),
        Some("embedder down"),
        "a retry keeps its cause visible"
    );
    let unfinished = store.unfinished_documents().await.unwrap();
    assert_eq!(
        unfinished
            .iter()
            .map(|d| (d.id, d.status, d.attempts))
            .collect::<Vec<_>>(),
        vec![(id, Status::Processing, 2)]
    );

    store
        .replace_chunks(id, &drafts("history", 3), t + 3)
        .await
        .unwrap();
    store
        .record_progress(
            id,
            Progress {
                phase: Phase::Extract,
                processed: 1,
                total: 3,
            },
            t + 3,
        )
        .await
        .unwrap();
    store
        .set_document_status(id, &change(Status::Completed, None, 2, None), t + 4)
        .await
        .unwrap();
    let d = store.document(env.workspace_id, id).await.unwrap().unwrap();
    assert_eq!(d.status, Status::Completed);
    assert_eq!(d.error, None);
    assert_eq!(d.completed_at.map(to_micros), Some(t + 4));
    assert_eq!(to_micros(d.updated_at), t + 4);
    assert_eq!(d.processing_phase, Some(Phase::Extract));
    assert_eq!(d.processed_chunks, 3);
    assert_eq!(d.total_chunks, 3);
    assert!(store.unfinished_documents().await.unwrap().is_empty());

    let events: Vec<DocumentEvent> = store.document_events(id).await.unwrap();
    let summary: Vec<(&str, Option<&str>, i64, Option<&str>)> = events
        .iter()
        .map(|e| {
            (
                e.status.as_str(),
                e.phase.as_deref(),
                e.attempt,
                e.message.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("pending", None, 0, None),
            ("processing", None, 1, None),
            ("retrying", Some("embed"), 1, Some("embedder down")),
            ("processing", None, 2, None),
            ("completed", None, 2, None),
        ]
    );
    assert!(events.windows(2).all(|w| w[0].at <= w[1].at));

    // A document out of the pipeline (completed) is not moved back into it: processing,
    // retrying and failed do not apply, and nothing is added to its history.
    for status in [Status::Processing, Status::Retrying, Status::Failed] {
        assert!(!store
            .set_document_status(
                id,
                &change(status, Some(Phase::Extract), 3, Some("late")),
                t + 5
            )
            .await
            .unwrap());
    }
    let d = store.document(env.workspace_id, id).await.unwrap().unwrap();
    assert_eq!((d.status, d.error.as_deref()), (Status::Completed, None));
    assert_eq!(store.document_events(id).await.unwrap().len(), 5);

    // Cancelled (which applies to any document), then a retry on request: back to pending,
    // phases kept.
    assert!(store
        .set_document_status(
            id,
            &change(Status::Cancelled, Some(Phase::Extract), 3, Some("boom")),
            t + 5,
        )
        .await
        .unwrap());
    let d = store.document(env.workspace_id, id).await.unwrap().unwrap();
    assert_eq!(
        (d.status, d.error.as_deref()),
        (Status::Cancelled, Some("boom"))
    );
    let other = add_workspace(&env.store).await;
    assert!(!store.reset_document(other, id, t + 6).await.unwrap());
    assert!(store
        .reset_document(env.workspace_id, id, t + 6)
        .await
        .unwrap());
    // Only a failed or cancelled document: now pending, a second reset is refused.
    assert!(!store
        .reset_document(env.workspace_id, id, t + 7)
        .await
        .unwrap());
    assert!(!store
        .reset_document(env.workspace_id, Uuid::now_v7(), t + 6)
        .await
        .unwrap());
    let d = store.document(env.workspace_id, id).await.unwrap().unwrap();
    assert_eq!(d.status, Status::Pending);
    assert_eq!(d.attempts, 0);
    assert_eq!(d.error, None);
    assert_eq!(d.phase_done, Some(Phase::Chunk));
    let last = store.document_events(id).await.unwrap().pop().unwrap();
    assert_eq!(last.status, "pending");
    assert_eq!(last.message.as_deref(), Some("retry requested"));
    let unfinished = store.unfinished_documents().await.unwrap();
    assert_eq!(
        unfinished
            .iter()
            .map(|d| (d.id, d.status, d.attempts))
            .collect::<Vec<_>>(),
        vec![(id, Status::Pending, 0)]
    );
}

#[tokio::test]
async fn progress_sets_phase_heartbeat_and_chunk_counts() {
    let env = setup().await;
    let id = env.document("progress", "").await;
    let t = to_micros(now());
    env.store
        .record_progress(
            id,
            Progress {
                phase: Phase::Parse,
                processed: 7,
                total: 9,
            },
            t + 10,
        )
        .await
        .unwrap();
    let d = env
        .store
        .document(env.workspace_id, id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.processing_phase, Some(Phase::Parse));
    assert_eq!(d.heartbeat_at.map(to_micros), Some(t + 10));
    assert_eq!(
        (d.processed_chunks, d.total_chunks),
        (0, 0),
        "parse has no chunk counts"
    );
    env.store
        .record_progress(
            id,
            Progress {
                phase: Phase::Embed,
                processed: 2,
                total: 5,
            },
            t + 20,
        )
        .await
        .unwrap();
    let d = env
        .store
        .document(env.workspace_id, id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.processing_phase, Some(Phase::Embed));
    assert_eq!(d.heartbeat_at.map(to_micros), Some(t + 20));
    assert_eq!((d.processed_chunks, d.total_chunks), (2, 5));

    // Phases: sections, then finish_phase.
    let sections = vec![
        Section {
            path: "Intro".to_string(),
            text: "Hello.".to_string(),
        },
        Section {
            path: String::new(),
            text: "World.".to_string(),
        },
    ];
    assert!(env.store.sections(id).await.unwrap().is_empty());
    env.store
        .save_sections(id, Phase::Parse, &sections)
        .await
        .unwrap();
    env.store
        .save_sections(id, Phase::Ocr, &sections[..1])
        .await
        .unwrap();
    assert_eq!(
        env.store.sections(id).await.unwrap(),
        sections[..1].to_vec()
    );
    let pipeline = env.store.pipeline_document(id).await.unwrap().unwrap();
    assert_eq!(pipeline.phase_done, Some(Phase::Ocr));
    env.store
        .finish_phase(id, Phase::Embed, t + 30)
        .await
        .unwrap();
    let pipeline = env.store.pipeline_document(id).await.unwrap().unwrap();
    assert_eq!(pipeline.phase_done, Some(Phase::Embed));
}

#[tokio::test]
async fn replacing_chunks_twice_leaves_one_set() {
    let env = setup().await;
    let id = env.document("chunks", "proj").await;
    let t = to_micros(now());
    env.store
        .replace_chunks(id, &drafts("chunks", 3), t)
        .await
        .unwrap();
    let first = env.store.chunks_without_vectors(id).await.unwrap();
    env.store
        .replace_chunks(id, &drafts("chunks", 2), t + 1)
        .await
        .unwrap();
    let chunks = env.store.chunks_without_vectors(id).await.unwrap();
    assert_eq!(
        chunks.iter().map(|c| c.index).collect::<Vec<_>>(),
        vec![0, 1]
    );
    assert_eq!(chunks[1].section_path, "Part 1");
    assert_eq!(chunks[1].content, "chunks chunk 1");
    assert!(
        chunks.iter().all(|c| first.iter().all(|f| f.id != c.id)),
        "new ids"
    );
    let d = env
        .store
        .document(env.workspace_id, id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (d.chunk_count, d.total_chunks, d.processed_chunks),
        (2, 2, 0)
    );
    assert_eq!(d.phase_done, Some(Phase::Chunk));
    assert_eq!(env.store.chunks_not_extracted(id).await.unwrap().len(), 2);
    let stored = env
        .store
        .chunks_by_ids(env.workspace_id, &[chunks[0].id, first[2].id])
        .await
        .unwrap();
    assert_eq!(stored.len(), 1, "the old chunks are gone");
    let chunk = &stored[0];
    assert_eq!(chunk.document_id, id);
    assert_eq!(chunk.project, "proj");
    assert_eq!(chunk.vault_id, env.vault.id);
    assert_eq!(chunk.title, "chunks");
    assert_eq!(chunk.source_type, "markdown");
    assert_eq!(to_micros(chunk.created_at), t + 1);
}

#[tokio::test]
async fn chunk_vectors_are_stored_once() {
    let env = setup().await;
    let (id, chunks) = env.chunked("vectors", 3).await;
    let (other, other_chunks) = env.chunked("elsewhere", 1).await;
    let vectors = vec![
        vectors_of(chunks[0].id, vec![1.0, 2.0], vec![]),
        vectors_of(
            chunks[2].id,
            vec![3.0, 4.0],
            vec![vec![0.5, 0.25], vec![-1.0, 2.5]],
        ),
    ];
    let indexed = env
        .store
        .put_chunk_vectors(id, "m", &vectors)
        .await
        .unwrap();
    assert_eq!(indexed.len(), 2);
    assert_eq!(indexed[0].chunk.id, chunks[0].id);
    assert_eq!(indexed[0].vector.as_deref(), Some(&[1.0, 2.0][..]));
    assert!(indexed[0].pieces.is_empty());
    assert_eq!(indexed[1].chunk.title, "vectors");
    assert_eq!(
        indexed[1].pieces,
        vec![vec![0.5, 0.25], vec![-1.0, 2.5]],
        "pieces come back in order, each as long as the chunk's vector"
    );
    let left = env.store.chunks_without_vectors(id).await.unwrap();
    assert_eq!(
        left.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![chunks[1].id]
    );
    // A chunk of another document is not touched through this one.
    let stray = env
        .store
        .put_chunk_vectors(
            id,
            "m",
            &[vectors_of(other_chunks[0].id, vec![9.0], vec![])],
        )
        .await
        .unwrap();
    assert!(stray.is_empty());
    assert_eq!(
        env.store.chunks_without_vectors(other).await.unwrap().len(),
        1
    );
    env.store
        .put_chunk_vectors(id, "m", &[vectors_of(chunks[1].id, vec![5.0, 6.0], vec![])])
        .await
        .unwrap();
    assert!(env
        .store
        .chunks_without_vectors(id)
        .await
        .unwrap()
        .is_empty());
    let page = env.store.chunks_page(None, None, 100).await.unwrap();
    assert_eq!(page.len(), 3, "only chunks with a vector");
    assert!(page
        .iter()
        .all(|c| c.chunk.document_id == id && c.vector.is_some()));
    let paged = page.iter().find(|c| c.chunk.id == chunks[2].id).unwrap();
    assert_eq!(paged.pieces, vec![vec![0.5, 0.25], vec![-1.0, 2.5]]);
}

fn vectors_of(chunk: Uuid, vector: Vec<f32>, pieces: Vec<Vec<f32>>) -> ChunkVectors {
    ChunkVectors {
        chunk,
        vector,
        pieces,
    }
}

#[tokio::test]
async fn an_equal_fact_from_two_documents_is_one_memory_with_two_evidence_items() {
    let env = setup().await;
    let s = shared_fact(&env).await;
    let a = env
        .store
        .document(env.workspace_id, s.a)
        .await
        .unwrap()
        .unwrap();
    let b = env
        .store
        .document(env.workspace_id, s.b)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(a.extracted_count, 2);
    assert_eq!(b.extracted_count, 1);
    let (all, total) = env.store.list_vault_memories(&env.filter()).await.unwrap();
    assert_eq!(total, 2);
    assert_eq!(all.len(), 2);

    let evidence = env.store.evidence_of(&[s.x]).await.unwrap();
    assert_eq!(evidence.len(), 2);
    assert!(evidence.iter().all(|(m, _)| *m == s.x));
    assert_eq!(evidence[0].1.source_id, s.b, "best confidence first");
    assert_eq!(evidence[0].1.confidence, f64::from(0.9f32));
    assert_eq!(evidence[0].1.title, "Minutes");
    assert_eq!(evidence[1].1.source_id, s.a);
    assert_eq!(evidence[1].1.section_path, "Part 0");
    assert_eq!(evidence[1].1.chunk_index, 0);
    assert_eq!(evidence[1].1.quote, "We deploy on Fridays.");

    let x = env
        .store
        .vault_memories_by_ids(env.workspace_id, &[s.x])
        .await
        .unwrap();
    assert_eq!(x.len(), 1);
    let source = x[0].source.clone().expect("a source");
    assert_eq!(source.id, s.a, "the oldest evidence");
    assert_eq!(source.title, "Handbook");
    assert_eq!(source.url.as_deref(), Some("https://example.com/Handbook"));

    let of_b = env
        .store
        .document_memories(env.workspace_id, s.b)
        .await
        .unwrap();
    assert_eq!(of_b.iter().map(|m| m.id).collect::<Vec<_>>(), vec![s.x]);
    let of_a = env
        .store
        .document_memories(env.workspace_id, s.a)
        .await
        .unwrap();
    assert_eq!(
        of_a.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![s.x, s.y]
    );

    let left = env.store.chunks_not_extracted(s.a).await.unwrap();
    assert_eq!(
        left.iter().map(|c| c.id).collect::<Vec<_>>(),
        vec![s.a_chunks[1].id]
    );
    // Saving the same chunk again (a respawn) changes nothing.
    let again = env
        .store
        .save_chunk_facts(
            s.a,
            s.a_chunks[0].id,
            "test-model",
            &[fact("We deploy on Fridays.", 0.6)],
            to_micros(now()),
        )
        .await
        .unwrap();
    assert!(again.is_empty());
    assert_eq!(env.store.evidence_of(&[s.x]).await.unwrap().len(), 2);
    let a = env
        .store
        .document(env.workspace_id, s.a)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(a.extracted_count, 2);
}

#[tokio::test]
async fn deleting_a_document_keeps_memories_another_document_cites() {
    let env = setup().await;
    let s = shared_fact(&env).await;
    let other = add_workspace(&env.store).await;
    assert!(env
        .store
        .delete_document(other, s.a)
        .await
        .unwrap()
        .is_none());

    let removal = env
        .store
        .delete_document(env.workspace_id, s.a)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(removal.counts.deleted_memories, 1);
    assert_eq!(removal.counts.preserved_memories, 1);
    assert_eq!(removal.memory_ids, vec![s.y]);
    assert_eq!(removal.lane, env.lane(""));
    let mut expected: Vec<Uuid> = s.a_chunks.iter().map(|c| c.id).collect();
    expected.sort();
    let mut got = removal.chunk_ids.clone();
    got.sort();
    assert_eq!(got, expected);

    assert!(env
        .store
        .document(env.workspace_id, s.a)
        .await
        .unwrap()
        .is_none());
    assert!(env.store.document_bytes(s.a).await.unwrap().is_none());
    assert!(env.store.document_events(s.a).await.unwrap().is_empty());
    let ids: Vec<Uuid> = s.a_chunks.iter().map(|c| c.id).collect();
    assert!(env
        .store
        .chunks_by_ids(env.workspace_id, &ids)
        .await
        .unwrap()
        .is_empty());
    let left = env
        .store
        .vault_memories_by_ids(env.workspace_id, &[s.x, s.y])
        .await
        .unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, s.x);
    assert_eq!(
        left[0].source.as_ref().map(|s| s.id),
        Some(s.b),
        "now cited by B only"
    );
    let evidence = env.store.evidence_of(&[s.x, s.y]).await.unwrap();
    assert_eq!(evidence.len(), 1);
    assert_eq!(evidence[0].1.source_id, s.b);
    let b = env
        .store
        .document(env.workspace_id, s.b)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(b.extracted_count, 1);

    assert!(env
        .store
        .delete_document(env.workspace_id, s.a)
        .await
        .unwrap()
        .is_none());
    let removal = env
        .store
        .delete_document(env.workspace_id, s.b)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(removal.counts.deleted_memories, 1);
    assert_eq!(removal.counts.preserved_memories, 0);
    assert_eq!(
        env.store
            .list_vault_memories(&env.filter())
            .await
            .unwrap()
            .1,
        0
    );
}

#[tokio::test]
async fn an_equal_company_fact_is_not_stored_twice() {
    let env = setup().await;
    let (first, created) = env
        .store
        .insert_company_fact(&company(
            env.lane(""),
            "Our office is in Berlin.",
            "",
            Category::Fact,
        ))
        .await
        .unwrap();
    assert!(created);
    assert_eq!(first.memory_type, MemoryType::Company);
    assert_eq!(first.content, "Our office is in Berlin.");
    assert_eq!(first.source, None);
    let (again, created) = env
        .store
        .insert_company_fact(&company(
            env.lane(""),
            "our office is in   BERLIN",
            "",
            Category::Context,
        ))
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(again, first);
    let (elsewhere, created) = env
        .store
        .insert_company_fact(&company(
            env.lane(""),
            "Our office is in Berlin.",
            "hq",
            Category::Fact,
        ))
        .await
        .unwrap();
    assert!(created, "another project is another fact");
    assert_ne!(elsewhere.id, first.id);
    let (scoped, created) = env
        .store
        .insert_company_fact(&company(
            env.lane("team-a"),
            "Our office is in Berlin.",
            "",
            Category::Fact,
        ))
        .await
        .unwrap();
    assert!(created, "another scope is another lane");
    assert_eq!(scoped.scope, "team-a");
    let page = env
        .store
        .vault_memories_page(None, None, 100)
        .await
        .unwrap();
    assert_eq!(page.len(), 3);
    assert!(page
        .iter()
        .all(|m| m.vector.as_deref() == Some(&[1.0, 0.0, 0.0][..])));
}

#[tokio::test]
async fn feedback_counts_and_wrong_hides() {
    let env = setup().await;
    let kept = env.company_fact("We use Rust.", "", Category::Fact).await;
    let wrong = env.company_fact("We use COBOL.", "", Category::Fact).await;
    let outdated = env.company_fact("We use Perl.", "", Category::Fact).await;
    let at = to_micros(now());
    let store = &env.store;
    assert!(store
        .vault_memory_feedback(env.workspace_id, kept, Rating::Helpful, None, at)
        .await
        .unwrap());
    assert!(store
        .vault_memory_feedback(env.workspace_id, kept, Rating::Helpful, Some("yes"), at)
        .await
        .unwrap());
    assert!(store
        .vault_memory_feedback(env.workspace_id, kept, Rating::NotHelpful, None, at)
        .await
        .unwrap());
    assert!(store
        .vault_memory_feedback(env.workspace_id, wrong, Rating::Wrong, Some("no"), at)
        .await
        .unwrap());
    assert!(store
        .vault_memory_feedback(env.workspace_id, outdated, Rating::Outdated, None, at)
        .await
        .unwrap());
    let other = add_workspace(store).await;
    assert!(!store
        .vault_memory_feedback(other, kept, Rating::Helpful, None, at)
        .await
        .unwrap());
    assert!(!store
        .vault_memory_feedback(env.workspace_id, Uuid::now_v7(), Rating::Helpful, None, at)
        .await
        .unwrap());

    let (list, total) = store.list_vault_memories(&env.filter()).await.unwrap();
    assert_eq!(total, 1);
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].id, kept);
    assert_eq!((list[0].helpful_count, list[0].not_helpful_count), (2, 1));
    assert!(!list[0].flagged_wrong);
    // Reads by id return flagged memories too, marked, for the caller to filter.
    let read = store
        .vault_memories_by_ids(env.workspace_id, &[kept, wrong, outdated])
        .await
        .unwrap();
    let flagged: std::collections::HashSet<Uuid> = read
        .iter()
        .filter(|m| m.flagged_wrong)
        .map(|m| m.id)
        .collect();
    assert_eq!(read.len(), 3);
    assert_eq!(flagged, std::collections::HashSet::from([wrong, outdated]));
    let page = store.vault_memories_page(None, None, 100).await.unwrap();
    assert_eq!(
        page.iter().map(|m| m.memory.id).collect::<Vec<_>>(),
        vec![kept]
    );
}

#[tokio::test]
async fn vault_memories_are_listed_with_filters_newest_first() {
    let env = setup().await;
    let plain = env
        .company_fact("No project fact", "", Category::Fact)
        .await;
    let p1_fact = env
        .company_fact("Project one fact", "p1", Category::Fact)
        .await;
    let p1_decision = env
        .company_fact("Project one decision", "p1", Category::Decision)
        .await;
    let p2_pref = env
        .company_fact("Project two preference", "p2", Category::Preference)
        .await;
    // A document memory (decision, no project).
    let (doc, chunks) = env.chunked("Doc", 1).await;
    let created = env
        .store
        .save_chunk_facts(
            doc,
            chunks[0].id,
            "m",
            &[fact("Extracted decision", 0.7)],
            to_micros(now()),
        )
        .await
        .unwrap();
    let extracted = created[0].memory.id;
    // Another lane's fact never shows.
    env.store
        .insert_company_fact(&company(
            env.lane("team"),
            "Scoped fact",
            "",
            Category::Fact,
        ))
        .await
        .unwrap();

    let ids = |list: &[memvault::model::vault::VaultMemory]| {
        list.iter().map(|m| m.id).collect::<Vec<_>>()
    };
    let store = &env.store;
    let (all, total) = store.list_vault_memories(&env.filter()).await.unwrap();
    assert_eq!(total, 5);
    assert_eq!(
        ids(&all),
        vec![extracted, p2_pref, p1_decision, p1_fact, plain],
        "newest first"
    );

    let mut f = env.filter();
    f.memory_type = Some(MemoryType::Company);
    let (list, total) = store.list_vault_memories(&f).await.unwrap();
    assert_eq!(
        (ids(&list), total),
        (vec![p2_pref, p1_decision, p1_fact, plain], 4)
    );
    f.memory_type = Some(MemoryType::Document);
    let (list, total) = store.list_vault_memories(&f).await.unwrap();
    assert_eq!((ids(&list), total), (vec![extracted], 1));
    assert_eq!(list[0].source.as_ref().map(|s| s.id), Some(doc));

    let mut f = env.filter();
    f.projects = vec![String::new()];
    let (list, total) = store.list_vault_memories(&f).await.unwrap();
    assert_eq!((ids(&list), total), (vec![extracted, plain], 2));
    f.projects = vec!["p1".to_string(), String::new()];
    let (list, total) = store.list_vault_memories(&f).await.unwrap();
    assert_eq!(
        (ids(&list), total),
        (vec![extracted, p1_decision, p1_fact, plain], 4)
    );
    f.projects = vec!["p1".to_string()];
    f.categories = vec![Category::Decision];
    let (list, total) = store.list_vault_memories(&f).await.unwrap();
    assert_eq!((ids(&list), total), (vec![p1_decision], 1));

    let mut f = env.filter();
    f.categories = vec![Category::Decision, Category::Preference];
    let (list, total) = store.list_vault_memories(&f).await.unwrap();
    assert_eq!(
        (ids(&list), total),
        (vec![extracted, p2_pref, p1_decision], 3)
    );

    let mut f = env.filter();
    f.limit = 2;
    f.offset = 2;
    let (list, total) = store.list_vault_memories(&f).await.unwrap();
    assert_eq!((ids(&list), total), (vec![p1_decision, p1_fact], 5));
    f.offset = 10;
    let (list, total) = store.list_vault_memories(&f).await.unwrap();
    assert_eq!((list.len(), total), (0, 5));
}

#[tokio::test]
async fn index_pages_cover_everything_once() {
    let env = setup().await;
    let mut chunk_ids = HashSet::new();
    for title in ["one", "two", "three"] {
        let (id, chunks) = env.chunked(title, 3).await;
        let vectors: Vec<ChunkVectors> = chunks
            .iter()
            .map(|c| vectors_of(c.id, vec![c.index as f32], vec![]))
            .collect();
        env.store
            .put_chunk_vectors(id, "m", &vectors)
            .await
            .unwrap();
        chunk_ids.extend(chunks.iter().map(|c| c.id));
    }
    let mut memory_ids = HashSet::new();
    for i in 0..7 {
        memory_ids.insert(
            env.company_fact(&format!("Fact number {i}"), "", Category::Fact)
                .await,
        );
    }

    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = env.store.chunks_page(None, after, 2).await.unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 2);
        assert!(page.iter().all(|c| c.vector.is_some()));
        after = page.last().map(|c| c.chunk.id);
        seen.extend(page.into_iter().map(|c| c.chunk.id));
    }
    assert_eq!(seen.len(), chunk_ids.len());
    assert_eq!(seen.iter().copied().collect::<HashSet<_>>(), chunk_ids);
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "ordered by id");

    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = env.store.vault_memories_page(None, after, 3).await.unwrap();
        if page.is_empty() {
            break;
        }
        after = page.last().map(|m| m.memory.id);
        seen.extend(page.into_iter().map(|m| m.memory.id));
    }
    assert_eq!(seen.len(), memory_ids.len());
    assert_eq!(seen.iter().copied().collect::<HashSet<_>>(), memory_ids);
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "ordered by id");
}

#[tokio::test]
async fn another_workspace_sees_nothing() {
    let env = setup().await;
    let s = shared_fact(&env).await;
    let company = env.company_fact("Shared secret", "", Category::Fact).await;
    let other = add_workspace(&env.store).await;
    let store = &env.store;
    assert!(store.vault(other, env.vault.id).await.unwrap().is_none());
    assert!(store.list_vaults(other).await.unwrap().is_empty());
    let theirs = store.default_vault(other).await.unwrap();
    assert_ne!(theirs.id, env.vault.id);
    assert!(store.document(other, s.a).await.unwrap().is_none());
    let (list, total) = store
        .list_documents(other, env.vault.id, "", 10, 0)
        .await
        .unwrap();
    assert!(list.is_empty());
    assert_eq!(total, 0);
    assert!(!store
        .reset_document(other, s.a, to_micros(now()))
        .await
        .unwrap());
    assert!(store.delete_document(other, s.a).await.unwrap().is_none());
    assert!(!store
        .vault_memory_feedback(other, company, Rating::Wrong, None, to_micros(now()))
        .await
        .unwrap());
    let chunk_ids: Vec<Uuid> = s.a_chunks.iter().map(|c| c.id).collect();
    assert!(store
        .chunks_by_ids(other, &chunk_ids)
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .vault_memories_by_ids(other, &[s.x, s.y, company])
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .document_memories(other, s.a)
        .await
        .unwrap()
        .is_empty());
    let filter = VaultMemoryFilter {
        lane: VaultLane {
            workspace_id: other,
            vault_id: env.vault.id,
            scope: String::new(),
        },
        memory_type: None,
        projects: Vec::new(),
        categories: Vec::new(),
        limit: 10,
        offset: 0,
    };
    assert_eq!(store.list_vault_memories(&filter).await.unwrap().1, 0);
    // Nothing of theirs was touched.
    assert!(store
        .document(env.workspace_id, s.a)
        .await
        .unwrap()
        .is_some());
    assert_eq!(
        store
            .vault_memories_by_ids(env.workspace_id, &[company])
            .await
            .unwrap()
            .len(),
        1
    );
}

/// `stored_hashes` answers for a batch what `find_duplicate` answers for one text: current,
/// live memories of that lane and project only.
#[tokio::test]
async fn stored_hashes_are_those_find_duplicate_finds() {
    let env = setup().await;
    let store = &env.store;
    let lane = memvault::model::Lane {
        workspace_id: env.workspace_id,
        scope: "work".to_string(),
    };
    let memory = |content: &str, scope: &str, project: &str| memvault::model::NewMemory {
        id: Uuid::now_v7(),
        workspace_id: env.workspace_id,
        user_id: "test".to_string(),
        content: content.to_string(),
        source: memvault::model::Source::Integration,
        category: Category::Fact,
        scope: scope.to_string(),
        project: project.to_string(),
        valid_from: None,
        valid_until: None,
        created_at: now(),
        origin_id: None,
        thread: String::new(),
        speaker: String::new(),
        embedding: None,
    };
    let hash = |content: &str| content_hash(&normalize(content));
    let kept = memory("Deploys run on Thursdays.", "work", "ops");
    let deleted = memory("The office closes at six.", "work", "ops");
    for m in [
        &kept,
        &deleted,
        &memory("Lunch is at noon.", "home", "ops"),
        &memory("Standups are at nine.", "work", "web"),
    ] {
        store.insert_memory(m).await.expect("insert").expect("new");
    }
    store
        .delete_memory(&lane, deleted.id, to_micros(now()))
        .await
        .expect("delete");
    let asked: Vec<String> = [
        kept.content.as_str(),
        deleted.content.as_str(),
        "Lunch is at noon.",
        "Standups are at nine.",
        "Never saved.",
    ]
    .iter()
    .map(|c| hash(c))
    .collect();
    let found = store
        .stored_hashes(&lane, "ops", &asked)
        .await
        .expect("stored hashes");
    assert_eq!(found, HashSet::from([hash(&kept.content)]));
    for (h, content) in asked.iter().zip([&kept.content, &deleted.content]) {
        let one = store.find_duplicate(&lane, "ops", h).await.expect("find");
        assert_eq!(one.is_some(), found.contains(h), "{content}");
    }
    assert!(store
        .stored_hashes(&lane, "ops", &[])
        .await
        .expect("none asked")
        .is_empty());
}
