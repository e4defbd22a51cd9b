//! Context Vault: documents of every format through the pipeline, cited extraction, search,
//! delete, failures injected at named phases, kills, restarts, cancel and retry, facts and the
//! walls between scopes, vaults and workspaces.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memvault_pipelines::fixtures;
use memvault_pipelines::pipeline::{Fault, Faults, Phase};
use reqwest::multipart::{Form, Part};
use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::helpers::{
    assert_error, fresh_database, json_of, spawn_app, spawn_app_with, spawn_with_faults,
    test_settings, TestApp,
};

const FACTS: &str = "Acme Corporation was founded in 1987 in Lyon. \
    The company employs 4,200 people across nine countries. \
    Its headquarters moved to Geneva in 2015. \
    The annual revenue reached 812 million euros in 2023.";

/// Uploads `bytes` as `file_name` with extra form fields.
async fn upload(
    app: &TestApp,
    file_name: &str,
    bytes: Vec<u8>,
    fields: &[(&str, &str)],
) -> (u16, Value) {
    let mut form = Form::new().part("file", Part::bytes(bytes).file_name(file_name.to_string()));
    for (name, value) in fields {
        form = form.text(name.to_string(), value.to_string());
    }
    json_of(
        app.request(Method::POST, "/api/context-vault/documents/upload")
            .multipart(form)
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// Queues a text document and returns its id.
pub(crate) async fn add_text(app: &TestApp, title: &str, content: &str, extra: Value) -> String {
    let mut body = json!({"title": title, "sourceType": "text", "content": content});
    crate::helpers::merge(&mut body, extra);
    let (status, json) = json_of(
        app.send_json(Method::POST, "/api/context-vault/documents", &body)
            .await,
    )
    .await;
    assert_eq!(status, 202, "{json}");
    assert_eq!(json["status"], "accepted");
    json["document"]["id"].as_str().unwrap().to_string()
}

/// Polls a document until its status is terminal; returns the detail (document + history).
async fn settle(app: &TestApp, id: &str) -> Value {
    settle_in(app, id, "").await
}

/// [`settle`] for a document of `scope` (another scope cannot see it).
pub(crate) async fn settle_in(app: &TestApp, id: &str, scope: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (status, json) = app
            .get_json(&crate::helpers::with_scope(
                &format!("/api/context-vault/documents/{id}"),
                scope,
            ))
            .await;
        assert_eq!(status, 200, "{json}");
        let state = json["document"]["status"].as_str().unwrap().to_string();
        if ["completed", "failed", "cancelled"].contains(&state.as_str()) {
            return json;
        }
        assert!(Instant::now() < deadline, "document {id} stuck: {json}");
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
}

/// Waits until a document's recorded phase is `phase` (and it is processing).
async fn wait_for_phase(app: &TestApp, id: &str, phase: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, json) = app
            .get_json(&format!("/api/context-vault/documents/{id}"))
            .await;
        if json["document"]["processingPhase"] == phase
            && json["document"]["status"] == "processing"
        {
            return;
        }
        assert!(Instant::now() < deadline, "never reached {phase}: {json}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn completed(app: &TestApp, id: &str) -> Value {
    completed_in(app, id, "").await
}

pub(crate) async fn completed_in(app: &TestApp, id: &str, scope: &str) -> Value {
    let detail = settle_in(app, id, scope).await;
    assert_eq!(detail["document"]["status"], "completed", "{detail}");
    detail["document"].clone()
}

async fn search(app: &TestApp, query: &str) -> Value {
    let (status, json) = app
        .get_json(&format!("/api/context-vault/search?{query}"))
        .await;
    assert_eq!(status, 200, "{json}");
    json
}

async fn memories_of(app: &TestApp, id: &str) -> Value {
    let (status, json) = app
        .get_json(&format!("/api/context-vault/documents/{id}/memories"))
        .await;
    assert_eq!(status, 200, "{json}");
    json
}

fn statuses(detail: &Value) -> Vec<String> {
    detail["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap().to_string())
        .collect()
}

/// Injects `fault` the first `times` times `phase` starts, for each document.
struct At {
    phase: Phase,
    fault: Fault,
    times: usize,
    fired: Mutex<HashMap<Uuid, usize>>,
}

impl At {
    fn new(phase: Phase, fault: Fault, times: usize) -> Self {
        At {
            phase,
            fault,
            times,
            fired: Mutex::new(HashMap::new()),
        }
    }
}

impl Faults for At {
    fn at(&self, document: Uuid, phase: Phase, _attempt: u32) -> Option<Fault> {
        if phase != self.phase {
            return None;
        }
        let mut fired = self.fired.lock().unwrap();
        let count = fired.entry(document).or_default();
        (*count < self.times).then(|| {
            *count += 1;
            self.fault.clone()
        })
    }
}

async fn spawn_faulty(
    fault: At,
    configure: impl FnOnce(&mut memvault::config::Settings),
) -> TestApp {
    let db = fresh_database().await;
    let mut settings = test_settings(&db);
    configure(&mut settings);
    spawn_with_faults(db, settings, Some(Arc::new(fault))).await
}

#[tokio::test]
async fn a_text_document_is_chunked_cited_and_searchable() {
    let app = spawn_app().await;
    let id = add_text(&app, "Acme profile", FACTS, json!({})).await;
    let document = completed(&app, &id).await;
    assert!(document["chunkCount"].as_i64().unwrap() >= 1, "{document}");
    assert!(
        document["extractedCount"].as_i64().unwrap() >= 3,
        "{document}"
    );
    // A completed document reports every chunk processed (not 0 of 0).
    assert_eq!(
        document["totalChunks"], document["chunkCount"],
        "{document}"
    );
    assert_eq!(document["processedChunks"], document["totalChunks"]);
    assert!(document["completedAt"].is_string());

    // Passages: the chunk that says it, with its contextual form.
    let found = search(&app, "q=when%20was%20acme%20founded&mode=documents").await;
    assert_eq!(found["mode"], "documents");
    assert!(found["memories"].as_array().unwrap().is_empty());
    let chunk = &found["chunks"][0];
    assert!(chunk["content"]
        .as_str()
        .unwrap()
        .contains("founded in 1987"));
    assert!(chunk["contextualContent"]
        .as_str()
        .unwrap()
        .starts_with("Acme profile"));
    assert_eq!(chunk["sourceId"], id.as_str());
    let relevance = chunk["relevance"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&relevance));

    // Memories: atomic facts, each quoting its chunk exactly.
    let found = search(&app, "q=how%20many%20employees&mode=memories").await;
    assert!(found["chunks"].as_array().unwrap().is_empty());
    let memory = &found["memories"][0];
    assert!(
        memory["content"].as_str().unwrap().contains("4,200"),
        "{found}"
    );
    assert_eq!(memory["memoryType"], "document");
    assert_eq!(memory["sourceId"], id.as_str());
    assert_eq!(memory["sourceTitle"], "Acme profile");
    let evidence = &memory["evidence"][0];
    let quote = evidence["quote"].as_str().unwrap();
    let cited = search(&app, "q=employs%20people%20countries&mode=documents").await;
    let passage = cited["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == evidence["chunkId"])
        .expect("the cited chunk is retrievable");
    assert!(passage["content"].as_str().unwrap().contains(quote));
    let confidence = evidence["confidence"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&confidence));

    // Hybrid: both lists, kept apart.
    let both = search(&app, "q=headquarters%20Geneva").await;
    assert_eq!(both["mode"], "hybrid");
    assert!(!both["chunks"].as_array().unwrap().is_empty());
    assert!(!both["memories"].as_array().unwrap().is_empty());
    assert_eq!(
        both["found"].as_i64().unwrap() as usize,
        both["chunks"].as_array().unwrap().len() + both["memories"].as_array().unwrap().len()
    );

    // The document's memories, and its history of statuses with timestamps.
    let listed = memories_of(&app, &id).await;
    assert_eq!(listed["total"], document["extractedCount"]);
    let detail = settle(&app, &id).await;
    assert_eq!(
        statuses(&detail),
        vec!["pending", "processing", "completed"],
        "{detail}"
    );
}

#[tokio::test]
async fn every_format_reaches_completed_with_its_structure() {
    let app = spawn_app().await;
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        (
            "guide.md",
            b"# Setup\n\n## Linux\n\nInstall the package with apt. The service listens on port 8080.\n".to_vec(),
            "port 8080",
            "Setup > Linux",
        ),
        (
            "staff.csv",
            b"name,role,city\nAda Lovelace,engineer,London\nGrace Hopper,admiral,Arlington\n".to_vec(),
            "Grace Hopper",
            "Rows",
        ),
        (
            "page.html",
            b"<html><head><title>T</title><script>var x = 'noise';</script></head><body><nav>Home | About</nav><main><h1>Pricing</h1><p>The pro plan costs 49 dollars per month.</p></main></body></html>".to_vec(),
            "49 dollars",
            "Pricing",
        ),
        (
            "report.pdf",
            fixtures::pdf(&["The first page describes the Falcon project.", "The Falcon project shipped in March 2024."]),
            "shipped in March 2024",
            "Page 2",
        ),
        (
            "policy.docx",
            fixtures::docx("Travel policy", &["Employees book flights through the portal.", "Economy class is required for flights under six hours."]),
            "six hours",
            "Travel policy",
        ),
        (
            "budget.xlsx",
            fixtures::xlsx("Budget", &[&["Team", "Budget"], &["Platform", "120000"], &["Research", "95000"]]),
            "Research",
            "Budget > Rows",
        ),
    ];
    let mut ids = Vec::new();
    for (name, bytes, _, _) in &cases {
        let (status, json) = upload(&app, name, bytes.clone(), &[]).await;
        assert_eq!(status, 202, "{name}: {json}");
        ids.push(json["document"]["id"].as_str().unwrap().to_string());
    }
    for ((name, _, needle, path), id) in cases.iter().zip(&ids) {
        let document = completed(&app, id).await;
        assert!(
            document["chunkCount"].as_i64().unwrap() >= 1,
            "{name}: {document}"
        );
        let found = search(
            &app,
            &format!("q={}&mode=documents&limit=20", needle.replace(' ', "%20")),
        )
        .await;
        let hit = found["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["sourceId"] == id.as_str())
            .unwrap_or_else(|| panic!("{name}: not found by '{needle}': {found}"));
        assert!(
            hit["content"].as_str().unwrap().contains(needle),
            "{name}: {hit}"
        );
        assert!(
            hit["sectionPath"].as_str().unwrap().contains(path),
            "{name}: section path {}",
            hit["sectionPath"]
        );
        // Script and navigation text never reach the index.
        assert!(!hit["content"].as_str().unwrap().contains("noise"));
    }
}

#[tokio::test]
async fn an_image_is_read_by_ocr() {
    let app = spawn_app().await;
    let image = fixtures::text_image("Invoice 4821 is due on Friday");
    let (status, json) = upload(&app, "scan.png", image, &[("title", "Scanned invoice")]).await;
    assert_eq!(status, 202, "{json}");
    let id = json["document"]["id"].as_str().unwrap();
    completed(&app, id).await;
    let found = search(&app, "q=invoice%204821&mode=documents").await;
    let content = found["chunks"][0]["content"].as_str().unwrap().to_string();
    assert!(content.contains("4821"), "{content}");
}

#[tokio::test]
async fn search_pages_with_offset_up_to_the_hundredth_result() {
    let app = spawn_app().await;
    let id = add_text(&app, "Acme profile", FACTS, json!({})).await;
    completed(&app, &id).await;
    let ids = |found: &Value| -> Vec<String> {
        found["memories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect()
    };
    let q = "q=acme%20company%20employs%20headquarters%20revenue&mode=memories";
    let whole = ids(&search(&app, &format!("{q}&limit=4")).await);
    assert_eq!(whole.len(), 4, "{whole:?}");
    let first = ids(&search(&app, &format!("{q}&limit=2")).await);
    let second = ids(&search(&app, &format!("{q}&limit=2&offset=2")).await);
    assert_eq!(first, whole[..2]);
    assert_eq!(second, whole[2..]);
    let past = search(&app, &format!("{q}&limit=2&offset=50")).await;
    assert!(ids(&past).is_empty(), "{past}");
    assert_eq!(past["found"], 0);
    // 80 + 20 is the deepest page; a deeper one, or a negative offset, names the field.
    search(&app, &format!("{q}&limit=20&offset=80")).await;
    for bad in ["81", "-1", "two"] {
        assert_error(
            app.get(&format!("/api/context-vault/search?{q}&offset={bad}"))
                .await,
            400,
            "offset",
        )
        .await;
    }
}

/// Two sentences about where Acme is inside a passage mostly about other things: the passage
/// as a whole is far from a question about the head office, those sentences are not.
const DILUTED: &str = "Acme Corporation was founded in 1987 in Lyon. \
    The staff canteen serves vegetarian lunches on Mondays and fish on Fridays. \
    Visitors park on the north side of the building and sign in at reception. \
    Its headquarters moved to Geneva in 2015. \
    The choir rehearses in the basement every Thursday evening. \
    Printer paper is ordered by the facilities team at the end of each month.";

#[tokio::test]
async fn a_chunk_ranks_by_its_best_cited_fact_when_the_fact_weight_says_so() {
    let q = "q=where%20is%20the%20head%20office%20of%20acme&ranking=semantic&limit=1";
    let relevance = |found: &Value, list: &str| found[list][0]["relevance"].as_f64().unwrap();

    // Fact weight 1: the passage is as close to the question as its closest cited fact.
    let lifted = spawn_app_with(|s| s.vault.search_fact_weight = 1.0).await;
    let id = add_text(&lifted, "Acme notes", DILUTED, json!({})).await;
    completed(&lifted, &id).await;
    let found = search(&lifted, q).await;
    let (chunk, fact) = (relevance(&found, "chunks"), relevance(&found, "memories"));
    assert!((chunk - fact).abs() < 0.01, "chunk {chunk}, fact {fact}");

    // Fact weight 0: the passage keeps its own, lower similarity.
    let plain = spawn_app_with(|s| s.vault.search_fact_weight = 0.0).await;
    let id = add_text(&plain, "Acme notes", DILUTED, json!({})).await;
    completed(&plain, &id).await;
    let found = search(&plain, q).await;
    let (own, fact) = (relevance(&found, "chunks"), relevance(&found, "memories"));
    assert!(own < fact - 0.05, "chunk {own}, fact {fact}");
    assert!(own < chunk - 0.05, "plain {own}, lifted {chunk}");
}

/// One passage of about 250 tokens: two sentences on where Acme's head office is, at its start,
/// then routine about the building.
const LONG_PASSAGE: &str = "Acme Corporation keeps its head office in Geneva. \
    The head office moved there from Lyon in 2015. \
    The staff canteen serves vegetarian lunches on Mondays and fish on Fridays. \
    Visitors park on the north side of the building and sign in at reception. \
    The choir rehearses in the basement every Thursday evening. \
    Printer paper is ordered by the facilities team at the end of each month. \
    The lifts are serviced twice a year by an outside contractor. \
    Bicycles may be left in the covered racks behind the loading bay. \
    The library on the third floor lends novels and travel guides for two weeks. \
    Fire drills take place each spring and autumn without warning. \
    The rooftop garden is tended by volunteers from every department. \
    Lost property is kept at the front desk for one month. \
    Meeting rooms are booked through the shared calendar, an hour at most. \
    The coffee machines are descaled every Friday afternoon.";

#[tokio::test]
async fn a_long_chunk_is_read_at_its_best_piece_when_pieces_are_on() {
    let q = "q=where%20is%20the%20head%20office%20of%20acme&ranking=semantic&limit=1";
    let relevance = |found: &Value| found["chunks"][0]["relevance"].as_f64().unwrap();
    let mut seen = Vec::new();
    for pieces in [true, false] {
        let app = spawn_app_with(|s| {
            s.vault.chunk_pieces = pieces;
            s.vault.search_fact_weight = 0.0;
        })
        .await;
        let id = add_text(&app, "Building notes", LONG_PASSAGE, json!({})).await;
        let document = completed(&app, &id).await;
        assert_eq!(document["chunkCount"], 1, "{document}");
        seen.push(relevance(&search(&app, q).await));
    }
    let (pieced, whole) = (seen[0], seen[1]);
    // The piece that holds the two sentences is read without the rest of the building.
    assert!(pieced > whole + 0.05, "with pieces {pieced}, whole {whole}");
}

#[tokio::test]
async fn keyword_search_does_not_embed_the_query() {
    // A model that can no longer embed: keyword ranking must not need it.
    let app = spawn_app().await;
    let id = add_text(&app, "Acme profile", FACTS, json!({})).await;
    completed(&app, &id).await;
    app.embedder_fails();
    let found = search(&app, "q=Geneva%20headquarters&ranking=keyword").await;
    assert!(
        found["chunks"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Geneva"),
        "{found}"
    );
    assert!(!found["memories"].as_array().unwrap().is_empty());
    // Rankings that read the query vector report the failure.
    let (status, json) = app
        .get_json("/api/context-vault/search?q=where%20is%20the%20head%20office")
        .await;
    assert_eq!(status, 503, "{json}");
}

#[tokio::test]
async fn bad_files_end_with_a_clear_error_and_the_server_keeps_serving() {
    let app = spawn_app_with(|s| s.vault.max_upload_bytes = 64 * 1024).await;
    // Refused at the door.
    let (status, json) = upload(&app, "empty.pdf", Vec::new(), &[]).await;
    assert_eq!(status, 400, "{json}");
    assert!(json["error"].as_str().unwrap().contains("file"));
    let (status, json) = upload(&app, "blob.bin", vec![0, 159, 146, 150, 1, 2], &[]).await;
    assert_eq!(status, 415, "{json}");
    let (status, json) = upload(&app, "big.txt", vec![b'a'; 70 * 1024], &[]).await;
    assert_eq!(status, 413, "{json}");
    let (status, json) = upload(
        &app,
        "x.pdf",
        b"%PDF-1.4".to_vec(),
        &[("sourceType", "exe")],
    )
    .await;
    assert_eq!(status, 400, "{json}");
    assert!(json["error"].as_str().unwrap().contains("sourceType"));

    // Accepted, then failed with a reason a person can act on.
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 9 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF".to_vec(), "pdf"),
        ("bomb.docx", fixtures::zip_bomb("word/document.xml", 40 * 1024 * 1024), "limit"),
        ("fake.png", b"\x89PNG\r\n\x1a\nnot really a png".to_vec(), "image"),
    ];
    for (name, bytes, needle) in cases {
        let (status, json) = upload(&app, name, bytes, &[]).await;
        assert_eq!(status, 202, "{name}: {json}");
        let id = json["document"]["id"].as_str().unwrap().to_string();
        let detail = settle(&app, &id).await;
        assert_eq!(detail["document"]["status"], "failed", "{name}: {detail}");
        let error = detail["document"]["error"].as_str().unwrap().to_lowercase();
        assert!(error.contains(needle), "{name}: {error}");
        assert!(
            !error.contains("panicked") && !error.contains("{"),
            "{name}: {error}"
        );
    }
    // Still serving, and what was stored before is intact.
    let id = add_text(&app, "after", FACTS, json!({})).await;
    completed(&app, &id).await;
}

#[tokio::test]
async fn one_fact_from_two_documents_is_one_memory_with_two_citations() {
    let app = spawn_app().await;
    let shared = "The Falcon project shipped in March 2024.";
    let first = add_text(
        &app,
        "Release notes",
        &format!("{shared} The launch event was held in Oslo."),
        json!({}),
    )
    .await;
    let second = add_text(
        &app,
        "Board memo",
        &format!("{shared} The budget for 2025 is 3 million euros."),
        json!({}),
    )
    .await;
    completed(&app, &first).await;
    completed(&app, &second).await;

    let found = search(&app, "q=when%20did%20falcon%20ship&mode=memories").await;
    let memory = found["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| {
            m["content"]
                .as_str()
                .unwrap()
                .contains("Falcon project shipped")
        })
        .expect("the shared fact")
        .clone();
    let sources: HashSet<&str> = memory["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["sourceId"].as_str().unwrap())
        .collect();
    assert_eq!(
        sources,
        HashSet::from([first.as_str(), second.as_str()]),
        "{memory}"
    );
    let (status, browse) = app.get_json("/api/context-vault/memories?limit=100").await;
    assert_eq!(status, 200);
    let copies = browse["memories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .unwrap()
                .contains("Falcon project shipped")
        })
        .count();
    assert_eq!(copies, 1, "{browse}");

    // Deleting one source keeps the shared memory, and drops what only it said.
    let (status, deleted) = json_of(
        app.send(
            Method::DELETE,
            &format!("/api/context-vault/documents/{first}"),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(deleted["deleted"], true);
    assert_eq!(deleted["documentId"], first.as_str());
    assert!(
        deleted["preservedMemoryCount"].as_i64().unwrap() >= 1,
        "{deleted}"
    );
    assert!(
        deleted["deletedMemoryCount"].as_i64().unwrap() >= 1,
        "{deleted}"
    );
    let found = search(&app, "q=launch%20event%20Oslo").await;
    assert!(
        !found["memories"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["content"].as_str().unwrap().contains("Oslo")),
        "{found}"
    );
    assert!(!found["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["sourceId"] == first.as_str()));
    let still = search(&app, "q=when%20did%20falcon%20ship&mode=memories").await;
    let kept = &still["memories"][0];
    assert!(kept["content"].as_str().unwrap().contains("Falcon"));
    assert_eq!(kept["evidence"].as_array().unwrap().len(), 1);
    let (status, _) = app
        .get_json(&format!("/api/context-vault/documents/{first}"))
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_failed_phase_is_retried_and_the_history_says_so() {
    let app = spawn_faulty(
        At::new(
            Phase::Embed,
            Fault::Fail("injected embed failure".into()),
            1,
        ),
        |_| {},
    )
    .await;
    let id = add_text(&app, "Acme", FACTS, json!({})).await;
    let detail = settle(&app, &id).await;
    assert_eq!(detail["document"]["status"], "completed", "{detail}");
    assert_eq!(detail["document"]["attempts"], 2);
    assert_eq!(
        statuses(&detail),
        vec![
            "pending",
            "processing",
            "retrying",
            "processing",
            "completed"
        ]
    );
    let retrying = &detail["history"][2];
    assert_eq!(retrying["phase"], "embed");
    assert!(retrying["message"]
        .as_str()
        .unwrap()
        .contains("injected embed failure"));
    // The respawn resumed after the committed chunk phase: one set of chunks.
    assert_no_duplicates(&app, &id).await;
}

#[tokio::test]
async fn a_panicking_phase_is_respawned() {
    let app = spawn_faulty(At::new(Phase::Chunk, Fault::Panic, 2), |_| {}).await;
    let id = add_text(&app, "Acme", FACTS, json!({})).await;
    let detail = settle(&app, &id).await;
    assert_eq!(detail["document"]["status"], "completed", "{detail}");
    assert_eq!(detail["document"]["attempts"], 3);
    let crashes: Vec<&Value> = detail["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"] == "retrying")
        .collect();
    assert_eq!(crashes.len(), 2);
    assert!(
        crashes[0]["message"].as_str().unwrap().contains("chunk"),
        "{detail}"
    );
}

#[tokio::test]
async fn a_stale_phase_is_killed_and_respawned() {
    // Long enough that a phase doing real work (embedding on a loaded machine) is never taken
    // for a stale one; the hang is found a few seconds after it starts.
    let app = spawn_faulty(At::new(Phase::Extract, Fault::Hang, 1), |s| {
        s.vault.ingest_stale_ms = 3_000
    })
    .await;
    let id = add_text(&app, "Acme", FACTS, json!({})).await;
    let detail = settle(&app, &id).await;
    assert_eq!(detail["document"]["status"], "completed", "{detail}");
    let retrying = detail["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["status"] == "retrying")
        .expect("a retry")
        .clone();
    assert_eq!(retrying["phase"], "extract");
    assert!(
        retrying["message"]
            .as_str()
            .unwrap()
            .contains("no progress"),
        "{retrying}"
    );
    assert_no_duplicates(&app, &id).await;
}

#[tokio::test]
async fn after_the_last_attempt_a_document_fails_with_its_error() {
    let app = spawn_faulty(
        At::new(
            Phase::Parse,
            Fault::Fail("injected parse outage".into()),
            100,
        ),
        |s| s.vault.ingest_max_attempts = 3,
    )
    .await;
    let id = add_text(&app, "Acme", FACTS, json!({})).await;
    let detail = settle(&app, &id).await;
    assert_eq!(detail["document"]["status"], "failed", "{detail}");
    assert_eq!(detail["document"]["attempts"], 3);
    assert!(detail["document"]["error"]
        .as_str()
        .unwrap()
        .contains("injected parse outage"));
    // A retry on request runs it again (the outage goes on here, so it fails again).
    let (status, json) = json_of(
        app.send(
            Method::POST,
            &format!("/api/context-vault/documents/{id}/retry"),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{json}");
    let detail = settle(&app, &id).await;
    assert_eq!(detail["document"]["status"], "failed");
    assert_eq!(
        statuses(&detail).iter().filter(|s| *s == "failed").count(),
        2
    );
    // Twice three generations, each failed in its parse phase: two retried and one given up
    // each time.
    let text = app.get("/metrics").await.text().await.unwrap();
    for (series, value) in [
        (
            r#"memvault_document_failures_total{phase="parse",reason="transient"}"#,
            6.0,
        ),
        (
            r#"memvault_document_generations_total{status="retried"}"#,
            4.0,
        ),
        (
            r#"memvault_document_generations_total{status="failed"}"#,
            2.0,
        ),
        (
            r#"memvault_document_generations_total{status="completed"}"#,
            0.0,
        ),
        (
            r#"memvault_document_phase_duration_seconds_count{phase="parse"}"#,
            0.0,
        ),
    ] {
        assert_eq!(
            crate::metrics::sample(&text, series),
            Some(value),
            "{series}: {text}"
        );
    }
}

/// Every chunk index appears once, and no memory is listed twice.
async fn assert_no_duplicates(app: &TestApp, id: &str) {
    let detail = settle(app, id).await;
    let chunk_count = detail["document"]["chunkCount"].as_i64().unwrap();
    let found = search(
        app,
        "q=acme%20company%20revenue%20headquarters%20employees&mode=documents&limit=20",
    )
    .await;
    let indexes: Vec<i64> = found["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["sourceId"] == id)
        .map(|c| c["chunkIndex"].as_i64().unwrap())
        .collect();
    let unique: HashSet<i64> = indexes.iter().copied().collect();
    assert_eq!(unique.len(), indexes.len(), "duplicate chunks: {indexes:?}");
    assert!(indexes.len() as i64 <= chunk_count);
    let memories = memories_of(app, id).await;
    let contents: Vec<&str> = memories["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    let distinct: HashSet<&str> = contents.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        contents.len(),
        "duplicate memories: {contents:?}"
    );
    assert_eq!(memories["total"], detail["document"]["extractedCount"]);
}

#[tokio::test]
async fn killing_each_phase_mid_work_never_duplicates_chunks_or_memories() {
    for phase in Phase::ALL {
        let app = spawn_faulty(At::new(phase, Fault::Hang, 1), |s| {
            s.vault.ingest_max_documents = 4
        })
        .await;
        let mut ids = Vec::new();
        for n in 0..4 {
            if phase == Phase::Ocr {
                // Only images (and scanned pages) reach the OCR phase.
                let image =
                    fixtures::text_image(&format!("Acme company revenue grew {n}0 percent"));
                let (status, json) = upload(&app, &format!("scan{n}.png"), image, &[]).await;
                assert_eq!(status, 202, "{json}");
                ids.push(json["document"]["id"].as_str().unwrap().to_string());
            } else {
                let content = format!(
                    "{FACTS} Document number {n} belongs to batch {}.",
                    phase.as_str()
                );
                ids.push(add_text(&app, &format!("Acme {n}"), &content, json!({})).await);
            }
        }
        for id in &ids {
            wait_for_phase(&app, id, phase.as_str()).await;
            let document: Uuid = id.parse().unwrap();
            assert!(
                app.vault.ingestion().unwrap().kill(document).await.unwrap(),
                "{id}"
            );
        }
        for id in &ids {
            let detail = settle(&app, id).await;
            assert_eq!(
                detail["document"]["status"], "completed",
                "{phase:?}: {detail}"
            );
            let retry = detail["history"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["status"] == "retrying")
                .expect("the kill is recorded");
            assert_eq!(retry["phase"], phase.as_str());
            assert!(
                retry["message"].as_str().unwrap().contains("killed"),
                "{retry}"
            );
            assert_no_duplicates(&app, id).await;
        }
    }
}

#[tokio::test]
async fn unfinished_documents_resume_after_a_restart() {
    let app = spawn_faulty(At::new(Phase::Embed, Fault::Hang, 1), |_| {}).await;
    let id = add_text(&app, "Acme", FACTS, json!({})).await;
    wait_for_phase(&app, &id, "embed").await;
    // The new server has no fault: it resumes the document after its committed phases.
    let app = app.restart().await;
    let document = completed(&app, &id).await;
    assert!(document["extractedCount"].as_i64().unwrap() >= 3);
    assert_no_duplicates(&app, &id).await;
}

#[tokio::test]
async fn cancel_stops_the_work_and_retry_finishes_it() {
    let app = spawn_faulty(At::new(Phase::Extract, Fault::Hang, 1), |_| {}).await;
    let id = add_text(&app, "Acme", FACTS, json!({})).await;
    wait_for_phase(&app, &id, "extract").await;
    let (status, json) = json_of(
        app.send(
            Method::POST,
            &format!("/api/context-vault/documents/{id}/cancel"),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(json["document"]["status"], "cancelled");
    // Cancelling again is a conflict that says why.
    let response = app
        .send(
            Method::POST,
            &format!("/api/context-vault/documents/{id}/cancel"),
        )
        .await;
    assert_error(response, 409, "already cancelled").await;
    let (status, json) = json_of(
        app.send(
            Method::POST,
            &format!("/api/context-vault/documents/{id}/retry"),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{json}");
    let detail = settle(&app, &id).await;
    assert_eq!(detail["document"]["status"], "completed", "{detail}");
    assert!(statuses(&detail).contains(&"cancelled".to_string()));
    assert_no_duplicates(&app, &id).await;
    // Retrying a completed document is a conflict that says why.
    let response = app
        .send(
            Method::POST,
            &format!("/api/context-vault/documents/{id}/retry"),
        )
        .await;
    assert_error(response, 409, "completed").await;
}

#[tokio::test]
async fn company_facts_are_curated_rated_and_found() {
    let app = spawn_app().await;
    let body = json!({"content": "Support tickets are answered within four business hours.", "scope": "support"});
    let (status, json) = json_of(
        app.send_json(Method::POST, "/api/context-vault/memories", &body)
            .await,
    )
    .await;
    assert_eq!(status, 201, "{json}");
    let memory = &json["memory"];
    assert_eq!(memory["memoryType"], "company");
    assert_eq!(memory["scope"], "support");
    assert!(memory["evidence"].as_array().unwrap().is_empty());
    let id = memory["id"].as_str().unwrap().to_string();
    // The same fact again: the existing one, nothing new.
    let (status, again) = json_of(
        app.send_json(Method::POST, "/api/context-vault/memories", &body)
            .await,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(again["memory"]["id"], id.as_str());
    // Validation names the field.
    let too_long = json!({"content": "x".repeat(801)});
    assert_error(
        app.send_json(Method::POST, "/api/context-vault/memories", &too_long)
            .await,
        400,
        "content",
    )
    .await;
    let bad_category = json!({"content": "ok fact", "category": "rumour"});
    assert_error(
        app.send_json(Method::POST, "/api/context-vault/memories", &bad_category)
            .await,
        400,
        "category",
    )
    .await;

    let found = search(
        &app,
        "q=how%20fast%20do%20we%20answer%20tickets&mode=memories&scope=support",
    )
    .await;
    assert_eq!(found["memories"][0]["id"], id.as_str(), "{found}");
    let unscoped = search(
        &app,
        "q=how%20fast%20do%20we%20answer%20tickets&mode=memories",
    )
    .await;
    assert!(
        unscoped["memories"].as_array().unwrap().is_empty(),
        "scope is a wall: {unscoped}"
    );
    let (status, browse) = app
        .get_json("/api/context-vault/memories?scope=support&memoryType=company")
        .await;
    assert_eq!(status, 200);
    assert_eq!(browse["total"], 1);
    assert_eq!(browse["hasMore"], false);

    let path = format!("/api/context-vault/memories/{id}/feedback");
    let (status, ok) = json_of(
        app.send_json(
            Method::POST,
            &path,
            &json!({"rating": "helpful", "scope": "support"}),
        )
        .await,
    )
    .await;
    assert_eq!((status, ok["success"].clone()), (200, json!(true)));
    assert_error(
        app.send_json(
            Method::POST,
            &path,
            &json!({"rating": "meh", "scope": "support"}),
        )
        .await,
        400,
        "rating",
    )
    .await;
    let (status, _) = json_of(
        app.send_json(
            Method::POST,
            &path,
            &json!({"rating": "wrong", "scope": "support"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200);
    let found = search(
        &app,
        "q=how%20fast%20do%20we%20answer%20tickets&mode=memories&scope=support",
    )
    .await;
    assert!(
        found["memories"].as_array().unwrap().is_empty(),
        "a wrong fact leaves search: {found}"
    );
    let unknown = format!("/api/context-vault/memories/{}/feedback", Uuid::new_v4());
    assert_error(
        app.send_json(Method::POST, &unknown, &json!({"rating": "helpful"}))
            .await,
        404,
        "not found",
    )
    .await;
}

/// Serves one HTML page on loopback.
async fn page_server() -> String {
    let router = axum::Router::new()
        .route(
            "/handbook",
            axum::routing::get(|| async {
                axum::response::Html("<html><body><main><h1>Handbook</h1><p>New hires receive a laptop on their first day.</p></main></body></html>")
            }),
        )
        .route(
            "/moved",
            axum::routing::get(|| async { axum::response::Redirect::permanent("/handbook") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{address}")
}

#[tokio::test]
async fn url_documents_are_fetched_and_internal_addresses_refused() {
    let base = page_server().await;
    let app = spawn_app().await;
    let body = json!({"sourceType": "url", "url": format!("{base}/moved")});
    let (status, json) = json_of(
        app.send_json(Method::POST, "/api/context-vault/documents", &body)
            .await,
    )
    .await;
    assert_eq!(status, 202, "{json}");
    let id = json["document"]["id"].as_str().unwrap().to_string();
    assert_eq!(json["document"]["publicUrl"], format!("{base}/handbook"));
    completed(&app, &id).await;
    let found = search(&app, "q=laptop%20first%20day&mode=documents").await;
    assert_eq!(found["chunks"][0]["sourceId"], id.as_str(), "{found}");

    // With the default policy, loopback is refused, and so are other schemes.
    let strict = spawn_app_with(|s| s.vault.fetch_allow_private = false).await;
    let response = strict
        .send_json(
            Method::POST,
            "/api/context-vault/documents",
            &json!({"sourceType": "url", "url": format!("{base}/handbook")}),
        )
        .await;
    assert_error(response, 400, "url").await;
    let response = strict
        .send_json(
            Method::POST,
            "/api/context-vault/documents",
            &json!({"sourceType": "url", "url": "file:///etc/passwd"}),
        )
        .await;
    assert_error(response, 400, "http").await;
    let response = strict
        .send_json(
            Method::POST,
            "/api/context-vault/documents",
            &json!({"sourceType": "text"}),
        )
        .await;
    assert_error(response, 400, "content").await;
}

#[tokio::test]
async fn scopes_vaults_and_workspaces_are_walls() {
    let app = spawn_app().await;
    let a = add_text(
        &app,
        "A",
        "The alpha team deploys on Mondays.",
        json!({"scope": "alpha"}),
    )
    .await;
    let b = add_text(
        &app,
        "B",
        "The beta team deploys on Fridays.",
        json!({"scope": "beta"}),
    )
    .await;
    completed_in(&app, &a, "alpha").await;
    completed_in(&app, &b, "beta").await;

    let only_a = search(
        &app,
        "q=when%20does%20the%20team%20deploy&mode=documents&scope=alpha",
    )
    .await;
    assert!(
        only_a["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["scope"] == "alpha"),
        "{only_a}"
    );
    assert!(!only_a["chunks"].as_array().unwrap().is_empty());
    let both = search(
        &app,
        "q=when%20does%20the%20team%20deploy&mode=documents&scopes=alpha,beta",
    )
    .await;
    let scopes: HashSet<&str> = both["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["scope"].as_str().unwrap())
        .collect();
    assert_eq!(scopes, HashSet::from(["alpha", "beta"]));
    let none = search(&app, "q=when%20does%20the%20team%20deploy&mode=documents").await;
    assert!(
        none["chunks"].as_array().unwrap().is_empty(),
        "unscoped sees neither: {none}"
    );

    // A named vault is separate from the default one.
    let (status, created) = json_of(
        app.send_json(
            Method::POST,
            "/api/context-vault/vaults",
            &json!({"name": "legal"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let vault = created["vault"]["id"].as_str().unwrap().to_string();
    let response = app
        .send_json(
            Method::POST,
            "/api/context-vault/vaults",
            &json!({"name": "legal"}),
        )
        .await;
    assert_error(response, 409, "legal").await;
    let c = add_text(
        &app,
        "C",
        "Contracts renew every January.",
        json!({"vaultId": vault}),
    )
    .await;
    completed(&app, &c).await;
    let default = search(&app, "q=contracts%20renew&mode=documents").await;
    assert!(default["chunks"].as_array().unwrap().is_empty());
    let legal = search(
        &app,
        &format!("q=contracts%20renew&mode=documents&vaultId={vault}"),
    )
    .await;
    assert_eq!(legal["chunks"][0]["sourceId"], c.as_str());
    let (_, vaults) = app.get_json("/api/context-vault/vaults").await;
    assert_eq!(vaults["vaults"].as_array().unwrap().len(), 2);
    let (status, listed) = app
        .get_json(&format!("/api/context-vault/documents?vaultId={vault}"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(listed["total"], 1);

    // Another workspace sees none of it.
    let (_, other_key) = app.other_workspace(None).await;
    for path in [
        format!("/api/context-vault/documents/{a}"),
        format!("/api/context-vault/documents/{a}/memories"),
        format!("/api/context-vault/search?q=contracts&vaultId={vault}"),
    ] {
        let response = app
            .client
            .get(app.url(&path))
            .header("X-API-Key", &other_key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{path}");
    }
    let response = app
        .client
        .delete(app.url(&format!("/api/context-vault/documents/{a}")))
        .header("X-API-Key", &other_key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let (_, listed) = json_of(
        app.client
            .get(app.url("/api/context-vault/documents"))
            .header("X-API-Key", &other_key)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(listed["total"], 0);
    // Search validation names its fields.
    assert_error(
        app.send(Method::GET, "/api/context-vault/search?q=x&mode=everything")
            .await,
        400,
        "mode",
    )
    .await;
    assert_error(
        app.send(Method::GET, "/api/context-vault/search?q=x&limit=21")
            .await,
        400,
        "limit",
    )
    .await;
    assert_error(
        app.send(Method::GET, "/api/context-vault/search").await,
        400,
        "q",
    )
    .await;
    assert_error(
        app.send(Method::GET, "/api/context-vault/search?q=x&vaultId=nope")
            .await,
        400,
        "vaultId",
    )
    .await;
}
