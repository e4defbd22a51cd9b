//! Erasure (issue 33): an erased scope or memory leaves no trace in any table, index or file,
//! while another scope keeps its data; the log records it without personal data; deleted
//! content is purged after the retention, across a restart.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use sqlx::Connection;
use uuid::Uuid;

use crate::helpers::{json_of, spawn_app, spawn_app_with, TestApp};
use crate::vault::{add_text, completed_in};

fn marker(prefix: &str) -> String {
    format!("{prefix}{}", Uuid::new_v4().simple())
}

/// Every place `marker` is stored: `table` (a row, any column) for each database table holding
/// it, and `file:<path>` for each file of the server holding its bytes (SQLite: the database,
/// its write-ahead log and the server's directories).
async fn traces(app: &TestApp, marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    if app.db.url.starts_with("postgres") {
        let mut db = sqlx::PgConnection::connect(&app.db.url).await.unwrap();
        let tables: Vec<String> =
            sqlx::query_scalar("SELECT tablename::TEXT FROM pg_tables WHERE schemaname = 'public'")
                .fetch_all(&mut db)
                .await
                .unwrap();
        for table in tables {
            let bytea: Vec<String> = sqlx::query_scalar(
                "SELECT column_name::TEXT FROM information_schema.columns \
                 WHERE table_schema = 'public' AND table_name = $1 AND data_type = 'bytea'",
            )
            .bind(&table)
            .fetch_all(&mut db)
            .await
            .unwrap();
            let mut condition = "position($1 in CAST(t AS TEXT)) > 0".to_string();
            for column in bytea {
                condition.push_str(&format!(
                    " OR position(convert_to($1, 'UTF8') in t.\"{column}\") > 0"
                ));
            }
            let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT COUNT(*) FROM \"{table}\" t WHERE {condition}"
            )))
            .bind(marker)
            .fetch_one(&mut db)
            .await
            .unwrap();
            if n > 0 {
                found.push(table);
            }
        }
    } else {
        let file = app.db.url.trim_start_matches("sqlite://");
        let dir = std::path::Path::new(file).parent().unwrap().to_path_buf();
        for root in [dir, app.db.work.path().to_path_buf()] {
            for path in files_under(&root) {
                let bytes = std::fs::read(&path).unwrap_or_default();
                if bytes.windows(marker.len()).any(|w| w == marker.as_bytes()) {
                    found.push(format!("file:{}", path.display()));
                }
            }
        }
    }
    found
}

fn files_under(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

async fn save_in(app: &TestApp, scope: &str, content: &str, extra: Value) -> Value {
    let mut body = json!({"content": content, "scope": scope});
    crate::helpers::merge(&mut body, extra);
    let (status, json) = json_of(app.send_json(Method::POST, "/api/memories", &body).await).await;
    assert_eq!(status, 201, "{json}");
    json
}

/// The workspace's memory count as its actor keeps it (what the memory limit is checked
/// against), and as storage counts it: they must agree.
async fn memory_count(app: &TestApp) -> i64 {
    let counted = app
        .workspaces
        .usage(app.workspace_id)
        .await
        .unwrap()
        .memory_count as i64;
    let stored = app
        .store
        .count_current_memories(app.workspace_id)
        .await
        .unwrap();
    assert_eq!(counted, stored);
    counted
}

/// A long note becomes a job; waits until it is done.
async fn note_in(app: &TestApp, scope: &str, note: &str) {
    let (status, json) = json_of(
        app.send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": note, "scope": scope}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 202, "{json}");
    let job = json["jobId"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, json) = app
            .get_json(&crate::helpers::with_scope(
                &format!("/api/memories/jobs/{job}"),
                scope,
            ))
            .await;
        if json["state"] == "completed" {
            return;
        }
        assert_ne!(json["state"], "failed", "{json}");
        assert!(Instant::now() < deadline, "job stuck: {json}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Erasing a scope removes every row, index entry and stored byte of it, and nothing of
/// another scope; the scope is usable again at once, and the log names no one.
#[tokio::test]
async fn erasing_a_scope_leaves_no_trace_and_spares_other_scopes() {
    let app = spawn_app().await;
    let own = marker("zqxalice");
    let shared = marker("qjvshared");

    // Alice: a memory with two versions, feedback, a long note, a document with its facts.
    let first = save_in(
        &app,
        "alice",
        &format!("My badge code is {own} and my locker is {shared}"),
        json!({}),
    )
    .await;
    let first_id = first["memory"]["id"].as_str().unwrap().to_string();
    let second = save_in(
        &app,
        "alice",
        &format!("My badge code is {own} and my locker number is {shared} since May"),
        json!({"supersedes": first_id}),
    )
    .await;
    assert_eq!(second["status"], "superseded", "{second}");
    let second_id = second["memory"]["id"].as_str().unwrap().to_string();
    let (status, feedback) = json_of(
        app.send_json(
            Method::POST,
            &format!("/api/memories/{second_id}/feedback?scope=alice"),
            &json!({"rating": "helpful", "explanation": format!("right, {own}")}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{feedback}");
    let sentence = format!("I keep the spare key {own} in the blue drawer of the office. ");
    note_in(&app, "alice", &sentence.repeat(30)).await;
    let document = add_text(
        &app,
        "alice's file",
        &format!(
            "Acme Corporation issued the badge {own} in 1987 in Lyon. \
             The badge {own} opens the archive room on the third floor. \
             The locker {shared} belongs to the night shift."
        ),
        json!({"scope": "alice"}),
    )
    .await;
    completed_in(&app, &document, "alice").await;
    let (_, facts) = app
        .get_json("/api/context-vault/memories?scope=alice")
        .await;
    assert!(
        facts.to_string().contains(&own),
        "the document's extracted facts hold the marker: {facts}"
    );

    // Bob shares a marker with Alice.
    save_in(
        &app,
        "bob",
        &format!("The locker {shared} is the one by the window"),
        json!({}),
    )
    .await;
    let bob_document = add_text(
        &app,
        "bob's file",
        &format!("Globex Industries rents the locker {shared} since 2011."),
        json!({"scope": "bob"}),
    )
    .await;
    completed_in(&app, &bob_document, "bob").await;

    // Export before erasing: every version, in the import format.
    let exported = app
        .request(Method::GET, "/api/scopes/alice/export")
        .send()
        .await
        .unwrap();
    assert_eq!(exported.status(), 200);
    assert_eq!(exported.headers()["content-type"], "application/x-ndjson");
    let lines = exported.text().await.unwrap();
    let lines: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines.iter().any(|l| l["id"] == first_id.as_str()),
        "history exported"
    );
    assert!(lines.iter().any(|l| l["id"] == second_id.as_str()));
    assert!(lines.iter().all(|l| l["scope"] == "alice"));
    // The command line writes the same lines.
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("alice.jsonl");
    let (ok, _, stderr) = crate::cli::admin(
        &app.db,
        dir.path(),
        &[
            "export",
            "--workspace",
            &app.workspace_id.to_string(),
            "--scope",
            "alice",
            "--output",
            output.to_str().unwrap(),
        ],
    );
    assert!(ok, "{stderr}");
    let from_cli: Vec<Value> = std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(from_cli, lines);

    assert!(
        !traces(&app, &own).await.is_empty(),
        "the marker is stored before"
    );
    let before = memory_count(&app).await;
    let (_, alice_list) = app.get_json("/api/memories?scope=alice").await;
    let alice_current = alice_list["total"].as_i64().unwrap();
    assert!(alice_current >= 2, "{alice_list}");

    let (status, erased) = json_of(
        app.request(Method::DELETE, "/api/scopes/alice")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{erased}");
    let counts = &erased["erased"];
    assert_eq!(counts["memories"], alice_current, "{erased}");
    assert!(
        counts["versions"].as_i64().unwrap() > alice_current,
        "{erased}"
    );
    assert_eq!(counts["feedback"], 1, "{erased}");
    assert_eq!(counts["jobs"], 1, "{erased}");
    assert_eq!(counts["documents"], 1, "{erased}");
    assert!(counts["chunks"].as_i64().unwrap() >= 1, "{erased}");
    assert!(counts["vaultMemories"].as_i64().unwrap() >= 1, "{erased}");

    // No row, no file holds Alice's marker; the shared one lives on in Bob's scope only.
    assert_eq!(traces(&app, &own).await, Vec::<String>::new());
    assert!(!traces(&app, &shared).await.is_empty());
    for path in [
        "/api/memories?scope=alice",
        "/api/memories/search?q=badge%20code%20locker&scope=alice",
        "/api/context-vault/memories?scope=alice",
        "/api/context-vault/search?q=badge%20archive%20room&scope=alice",
        "/api/context-vault/documents?scope=alice",
        "/api/memories/profile?scope=alice",
        "/api/memories/graph?scope=alice",
    ] {
        let (status, json) = app.get_json(path).await;
        assert_eq!(status, 200, "{path}: {json}");
        assert!(
            !json.to_string().contains(&own) && !json.to_string().contains(&shared),
            "{path}: {json}"
        );
    }
    let (status, _) = app
        .get_json(&format!("/api/memories/{first_id}/history?scope=alice"))
        .await;
    assert_eq!(status, 404);
    let (_, bob) = app
        .get_json("/api/memories/search?q=locker%20by%20the%20window&scope=bob")
        .await;
    assert!(bob.to_string().contains(&shared), "{bob}");
    let (_, bob_vault) = app
        .get_json("/api/context-vault/search?q=who%20rents%20the%20locker&scope=bob")
        .await;
    assert!(bob_vault.to_string().contains(&shared), "{bob_vault}");

    // The room is freed, and the lane starts fresh.
    assert_eq!(memory_count(&app).await, before - alice_current);
    let again = save_in(
        &app,
        "alice",
        &format!("My badge code is {own} and my locker is {shared}"),
        json!({}),
    )
    .await;
    assert_eq!(again["status"], "created", "{again}");

    // The log: who and what, with the scope only as a hash.
    let (status, log) = app
        .get_json(&format!("/api/workspaces/{}/erasures", app.workspace_id))
        .await;
    assert_eq!(status, 200, "{log}");
    assert_eq!(log["total"], 1, "{log}");
    let entry = &log["erasures"][0];
    assert_eq!(entry["kind"], "scope");
    assert_eq!(entry["byKind"], "key");
    assert_eq!(entry["erased"], erased["erased"]);
    let hash = hex::encode(Sha256::digest(format!("{}:alice", app.workspace_id)));
    assert_eq!(entry["scopeHash"], hash.as_str());
    assert!(!log.to_string().contains("alice"), "{log}");
}

/// Erasing one memory removes its whole chain and the text of the note it came from; the rest
/// of the scope stays. Bad input is refused clearly.
#[tokio::test]
async fn erasing_a_memory_removes_its_chain_only() {
    let app = spawn_app().await;
    let own = marker("zqxcarol");
    // A long note: the marker is in one of the memories it is split into.
    let mut note = format!("My passport number is {own}. ");
    for city in [
        "Lisbon", "Oslo", "Quito", "Hanoi", "Dakar", "Lima", "Perth", "Riga",
    ] {
        note.push_str(&format!(
            "In the summer I travelled to {city} with my two sisters and stayed for a week. "
        ));
    }
    note.push_str(&"I like green tea in the morning and coffee after lunch. ".repeat(6));
    assert!(note.len() > 1_000);
    note_in(&app, "carol", &note).await;
    let (_, listed) = app
        .get_json(&format!("/api/memories?scope=carol&search={}", own))
        .await;
    assert_eq!(listed["total"], 1, "{listed}");
    let first_id = listed["memories"][0]["id"].as_str().unwrap().to_string();
    let (_, all) = app.get_json("/api/memories?scope=carol").await;
    let total = all["total"].as_i64().unwrap();
    assert!(total > 1, "{all}");
    let second = save_in(
        &app,
        "carol",
        &format!("My passport number is {own}, renewed in March"),
        json!({"supersedes": first_id}),
    )
    .await;
    let second_id = second["memory"]["id"].as_str().unwrap().to_string();

    // Another scope cannot erase it; a malformed id is simply not found.
    for path in [
        format!("/api/memories/{first_id}/erase?scope=dave"),
        "/api/memories/not-an-id/erase?scope=carol".to_string(),
    ] {
        let (status, json) = json_of(app.request(Method::POST, &path).send().await.unwrap()).await;
        assert_eq!(status, 404, "{path}: {json}");
    }
    let (status, erased) = json_of(
        app.request(
            Method::POST,
            &format!("/api/memories/{first_id}/erase?scope=carol"),
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{erased}");
    assert_eq!(erased["kind"], "memory");
    assert_eq!(erased["erased"]["versions"], 2, "{erased}");
    assert_eq!(erased["erased"]["memories"], 1, "{erased}");
    assert_eq!(erased["erased"]["jobs"], 1, "the note's text: {erased}");
    assert_eq!(traces(&app, &own).await, Vec::<String>::new());
    let (status, _) = app
        .get_json(&format!("/api/memories/{second_id}?scope=carol"))
        .await;
    assert_eq!(status, 404);
    let (_, rest) = app.get_json("/api/memories?scope=carol").await;
    assert_eq!(rest["total"], total - 1, "{rest}");

    // A scope is required, and its length is checked.
    let long = "s".repeat(201);
    for path in ["/api/scopes/%20", &format!("/api/scopes/{long}")] {
        let (status, json) = json_of(app.request(Method::DELETE, path).send().await.unwrap()).await;
        assert_eq!(status, 400, "{path}: {json}");
        assert!(json["error"].as_str().unwrap().contains("scope"), "{json}");
    }
}

/// A workspace's erasure log and scope erasure are for its owners and admins: a writer's key
/// is refused, and nothing is erased.
#[tokio::test]
async fn only_owners_and_admins_erase_a_scope() {
    let app = spawn_app().await;
    save_in(&app, "erin", "I was born in Porto", json!({})).await;
    let (status, created) = json_of(
        app.send_json(
            Method::POST,
            &format!("/api/workspaces/{}/api-keys", app.workspace_id),
            &json!({"name": "writer", "role": "member"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let writer = created["key"].as_str().unwrap().to_string();
    for (method, path) in [
        (Method::DELETE, "/api/scopes/erin".to_string()),
        (
            Method::GET,
            format!("/api/workspaces/{}/erasures", app.workspace_id),
        ),
        (Method::GET, "/api/scopes/erin/export".to_string()),
    ] {
        let response = app
            .client
            .request(method, app.url(&path))
            .header("X-API-Key", &writer)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{path}");
    }
    let (_, list) = app.get_json("/api/memories?scope=erin").await;
    assert_eq!(list["total"], 1, "{list}");
    // An admin's key may.
    let (status, created) = json_of(
        app.send_json(
            Method::POST,
            &format!("/api/workspaces/{}/api-keys", app.workspace_id),
            &json!({"name": "admin", "role": "admin"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let response = app
        .client
        .delete(app.url("/api/scopes/erin"))
        .header("X-API-Key", created["key"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (_, list) = app.get_json("/api/memories?scope=erin").await;
    assert_eq!(list["total"], 0, "{list}");
}

/// With a retention of 0 days, a deleted memory's content is purged by the purger, here after
/// a restart between the delete and the purge; its id and timestamps stay.
#[tokio::test]
async fn deleted_content_is_purged_after_the_retention_across_a_restart() {
    let app = spawn_app_with(|settings| {
        settings.storage.deleted_retention_days = 0;
        // Only the round at start-up runs during the test.
        settings.storage.purge_interval_secs = 3_600;
    })
    .await;
    let own = marker("zqxpurge");
    let saved = save_in(&app, "", &format!("My door code is {own}"), json!({})).await;
    let id = saved["memory"]["id"].as_str().unwrap().to_string();
    let response = app
        .request(Method::DELETE, &format!("/api/memories/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // A long note whose one memory is forgotten: the note's text goes with the purge too.
    let noted = marker("zqxnote");
    note_in(
        &app,
        "",
        &format!("The alarm code of the garage is {noted}. ").repeat(40),
    )
    .await;
    let (_, listed) = app.get_json(&format!("/api/memories?search={noted}")).await;
    assert_eq!(listed["total"], 1, "{listed}");
    let from_note = listed["memories"][0]["id"].as_str().unwrap().to_string();
    let response = app
        .request(Method::POST, &format!("/api/memories/{from_note}/forget"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    for marker in [&own, &noted] {
        assert!(
            !traces(&app, marker).await.is_empty(),
            "a soft delete keeps the content until the purge"
        );
    }
    let app = app.restart().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut found = traces(&app, &own).await;
        found.extend(traces(&app, &noted).await);
        if found.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "not purged: {found:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // What stays is the id and the timestamps.
    let kept: i64 = if app.db.url.starts_with("postgres") {
        let mut db = sqlx::PgConnection::connect(&app.db.url).await.unwrap();
        sqlx::query_scalar("SELECT COUNT(*) FROM memories WHERE id = $1 AND content = ''")
            .bind(Uuid::parse_str(&id).unwrap())
            .fetch_one(&mut db)
            .await
            .unwrap()
    } else {
        let mut db = sqlx::SqliteConnection::connect(&app.db.url).await.unwrap();
        sqlx::query_scalar("SELECT COUNT(*) FROM memories WHERE id = $1 AND content = ''")
            .bind(Uuid::parse_str(&id).unwrap())
            .fetch_one(&mut db)
            .await
            .unwrap()
    };
    assert_eq!(kept, 1);
}
