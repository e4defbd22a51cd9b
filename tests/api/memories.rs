//! Part 4 of the contract: the memories API, its version chains and the scope wall.

use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{assert_error, json_of, spawn_app};

#[tokio::test]
async fn save_returns_201_with_the_full_memory() {
    let app = spawn_app().await;
    let response = app.send_json(Method::POST, "/api/memories", &json!({"content": "I prefer dark mode", "category": "preference", "scope": "user-1", "project": "ui"})).await;
    let (status, body) = json_of(response).await;
    assert_eq!(status, 201);
    assert_eq!(body["status"], "created");
    let m = &body["memory"];
    assert_eq!(m["content"], "I prefer dark mode");
    assert_eq!(m["category"], "preference");
    assert_eq!(m["scope"], "user-1");
    assert_eq!(m["project"], "ui");
    assert_eq!(m["source"], "api");
    assert_eq!(m["version"], 1);
    assert_eq!(m["isCurrent"], true);
    assert_eq!(m["rootId"], m["id"]);
    assert!(m["supersedesId"].is_null());
    assert!(m["userId"].as_str().unwrap().starts_with("key:"));
    // Acknowledged means committed: it reads back at once.
    let (status, read) = app
        .get_json(&format!(
            "/api/memories/{}?scope=user-1",
            m["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(status, 200);
    assert_eq!(&read, m);
}

#[tokio::test]
async fn save_validates_every_field_and_names_it() {
    let app = spawn_app().await;
    let long = "x".repeat(10_001);
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "content"),
        (json!({"content": ""}), "content"),
        (json!({"content": "   "}), "content"),
        (json!({"content": long}), "content"),
        (json!({"content": "ok", "category": "opinion"}), "category"),
        (json!({"content": "ok", "scope": "s".repeat(201)}), "scope"),
        (
            json!({"content": "ok", "project": "p".repeat(101)}),
            "project",
        ),
        (
            json!({"content": "ok", "project": "__memvault_no_project__"}),
            "project",
        ),
        (
            json!({"content": "ok", "validFrom": "yesterday"}),
            "validFrom",
        ),
        (
            json!({"content": "ok", "validUntil": "2020-13-01T00:00:00Z"}),
            "validUntil",
        ),
        (
            json!({"content": "ok", "validFrom": "2030-01-02T00:00:00Z", "validUntil": "2030-01-01T00:00:00Z"}),
            "validUntil",
        ),
        (
            json!({"content": "ok", "supersedes": "not-a-uuid"}),
            "supersedes",
        ),
        (json!({"content": 5}), "content"),
    ];
    for (body, field) in cases {
        let response = app.send_json(Method::POST, "/api/memories", &body).await;
        assert_error(response, 400, field).await;
    }
    // Exactly at the limits is fine (a note that long goes the 202 way).
    let response = app
        .send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": "y".repeat(10_000), "scope": "s".repeat(200), "project": "p".repeat(100)}),
        )
        .await;
    assert_eq!(response.status(), 202);
    // Nothing invalid was stored.
    let (_, list) = app.get_json("/api/memories").await;
    assert_eq!(list["total"], 0);
}

#[tokio::test]
async fn an_exact_duplicate_returns_the_existing_memory_and_stores_nothing() {
    let app = spawn_app().await;
    let first = app
        .save("I live in Paris.", json!({"project": "home"}))
        .await;
    let response = app
        .send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": "  i LIVE in   paris ", "project": "home"}),
        )
        .await;
    let (status, body) = json_of(response).await;
    assert_eq!(status, 201);
    assert_eq!(body["status"], "duplicate");
    assert_eq!(body["memory"]["id"], first["id"]);
    // Another project or scope is another lane: not a duplicate.
    let other = app
        .save("I live in Paris.", json!({"project": "work"}))
        .await;
    assert_ne!(other["id"], first["id"]);
    let scoped = app
        .save(
            "I live in Paris.",
            json!({"scope": "u2", "project": "home"}),
        )
        .await;
    assert_ne!(scoped["id"], first["id"]);
    let (_, list) = app.get_json("/api/memories?project=home,work").await;
    assert_eq!(list["total"], 2);
}

#[tokio::test]
async fn concurrent_identical_saves_store_one_memory() {
    let app = spawn_app().await;
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let request = app
                .request(Method::POST, "/api/memories")
                .json(&json!({"content": "same text"}));
            tokio::spawn(async move { json_of(request.send().await.unwrap()).await })
        })
        .collect();
    let mut ids = Vec::new();
    for task in tasks {
        let (status, body) = task.await.unwrap();
        assert_eq!(status, 201, "{body}");
        ids.push(body["memory"]["id"].clone());
    }
    ids.dedup();
    assert_eq!(ids.len(), 1);
    let (_, list) = app.get_json("/api/memories").await;
    assert_eq!(list["total"], 1);
}

/// The store's batch insert (an import's commit): one transaction, each memory as a single
/// insert would be; a second current copy of the same content in a lane and project is refused.
#[tokio::test]
async fn insert_memories_stores_each_and_refuses_duplicates() {
    use memvault::model::{Category, Lane, NewMemory, Source};
    let app = spawn_app().await;
    let new = |content: &str, project: &str| NewMemory {
        id: uuid::Uuid::now_v7(),
        workspace_id: app.workspace_id,
        user_id: "import".to_string(),
        content: content.to_string(),
        source: Source::Integration,
        category: Category::Fact,
        scope: String::new(),
        project: project.to_string(),
        valid_from: None,
        valid_until: None,
        created_at: chrono::Utc::now(),
        origin_id: None,
        thread: String::new(),
        speaker: String::new(),
        embedding: None,
    };
    let batch = vec![
        new("The boiler was serviced in May.", ""),
        new("the boiler  was serviced in may.", ""),
        new("The boiler was serviced in May.", "home"),
    ];
    let rows: Vec<_> = app
        .store
        .insert_memories(&batch)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].as_ref().map(|m| m.id), Some(batch[0].id));
    assert!(rows[1].is_none(), "{:?}", rows[1]);
    assert_eq!(rows[2].as_ref().map(|m| m.project.as_str()), Some("home"));
    let lane = Lane {
        workspace_id: app.workspace_id,
        scope: String::new(),
    };
    let stored = app.store.memory(&lane, batch[0].id).await.unwrap().unwrap();
    assert_eq!(Some(stored), rows[0].clone());
    assert!(app
        .store
        .memory(&lane, batch[1].id)
        .await
        .unwrap()
        .is_none());
    assert!(app.store.insert_memories(&[]).await.is_empty());

    // More memories than one statement carries, each with its vector but one, and one refused
    // as a duplicate of an earlier one in the same batch: the vectors stored are those of the
    // memories stored, each its own.
    let vector = |i: usize| -> Vec<f32> { (0..4).map(|d| (i * 4 + d) as f32).collect() };
    let mut many: Vec<NewMemory> = (0..150)
        .map(|i| {
            let mut m = new(&format!("Reading number {i} of the meter."), "meters");
            m.embedding = (i != 7).then(|| memvault::model::Embedded {
                model: "test-model".into(),
                vector: vector(i).into(),
            });
            m
        })
        .collect();
    many[140].content = many[3].content.clone();
    let rows = app.store.insert_memories(&many).await;
    assert_eq!(rows.len(), 150);
    for (i, row) in rows.iter().enumerate() {
        let row = row.as_ref().unwrap();
        match i {
            140 => assert!(row.is_none(), "{row:?}"),
            _ => assert_eq!(row.as_ref().map(|m| m.id), Some(many[i].id)),
        }
    }
    let mut stored = std::collections::HashMap::new();
    let mut after = 0;
    loop {
        let page = app
            .store
            .current_memories_page(Some(app.workspace_id), after, 100)
            .await
            .unwrap();
        let Some(last) = page.last() else { break };
        after = last.seq;
        stored.extend(page.into_iter().map(|m| (m.memory.id, m.vector)));
    }
    for (i, m) in many.iter().enumerate() {
        match i {
            140 => assert!(!stored.contains_key(&m.id)),
            7 => assert_eq!(stored[&m.id], None),
            _ => assert_eq!(
                stored[&m.id],
                Some(("test-model".to_string(), vector(i))),
                "memory {i}"
            ),
        }
    }
}

#[tokio::test]
async fn supersedes_makes_the_next_version_of_the_chain() {
    let app = spawn_app().await;
    let v1 = app
        .save(
            "deploys are on Tuesday",
            json!({"category": "decision", "project": "ops"}),
        )
        .await;
    let response = app
        .send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": "deploys are on Thursday", "supersedes": v1["id"]}),
        )
        .await;
    let (status, body) = json_of(response).await;
    assert_eq!(status, 201);
    assert_eq!(body["status"], "superseded");
    let v2 = &body["memory"];
    assert_eq!(v2["version"], 2);
    assert_eq!(v2["rootId"], v1["id"]);
    assert_eq!(v2["supersedesId"], v1["id"]);
    assert_eq!(v2["isCurrent"], true);
    // Category and project are inherited when not given.
    assert_eq!(v2["category"], "decision");
    assert_eq!(v2["project"], "ops");
    let (_, old) = app
        .get_json(&format!("/api/memories/{}", v1["id"].as_str().unwrap()))
        .await;
    assert_eq!(old["isCurrent"], false);
    // Lists show only the current version.
    let (_, list) = app.get_json("/api/memories?project=ops").await;
    assert_eq!(list["total"], 1);
    assert_eq!(list["memories"][0]["id"], v2["id"]);
    // History from either version.
    for id in [&v1["id"], &v2["id"]] {
        let (status, history) = app
            .get_json(&format!("/api/memories/{}/history", id.as_str().unwrap()))
            .await;
        assert_eq!(status, 200);
        assert_eq!(history["current"]["id"], v2["id"]);
        assert_eq!(history["current"]["version"], 2);
        assert_eq!(history["history"].as_array().unwrap().len(), 1);
        assert_eq!(history["history"][0]["id"], v1["id"]);
        assert_eq!(history["history"][0]["content"], "deploys are on Tuesday");
    }
    // Superseding an old version is refused; an unknown one is 404.
    let response = app
        .send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": "deploys are on Friday", "supersedes": v1["id"]}),
        )
        .await;
    assert_error(response, 409, "not the current version").await;
    let response = app
        .send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": "deploys are on Friday", "supersedes": uuid::Uuid::new_v4()}),
        )
        .await;
    assert_error(response, 404, "not found").await;
}

#[tokio::test]
async fn concurrent_supersessions_leave_exactly_one_current_version() {
    let app = spawn_app().await;
    let v1 = app.save("the office is in Lyon", json!({})).await;
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let request = app.request(Method::POST, "/api/memories").json(
                &json!({"content": format!("the office is in city {i}"), "supersedes": v1["id"]}),
            );
            tokio::spawn(async move { json_of(request.send().await.unwrap()).await })
        })
        .collect();
    let mut winners = 0;
    for task in tasks {
        let (status, body) = task.await.unwrap();
        match status {
            201 => {
                assert_eq!(body["status"], "superseded");
                winners += 1;
            }
            409 => assert_eq!(body["code"], "HTTP_409"),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(winners, 1);
    let (_, history) = app
        .get_json(&format!(
            "/api/memories/{}/history",
            v1["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(history["current"]["version"], 2);
    assert_eq!(history["history"].as_array().unwrap().len(), 1);
    let (_, list) = app.get_json("/api/memories").await;
    assert_eq!(list["total"], 1);
}

#[tokio::test]
async fn list_filters_paginates_and_counts_exactly() {
    let app = spawn_app().await;
    for i in 0..7 {
        app.save(
            &format!("fact number {i}"),
            json!({"category": "fact", "project": "alpha"}),
        )
        .await;
    }
    for i in 0..3 {
        app.save(
            &format!("Preference Number {i}"),
            json!({"category": "preference"}),
        )
        .await;
    }
    app.save(
        "a decision about Beta",
        json!({"category": "decision", "project": "beta"}),
    )
    .await;
    app.save("scoped one", json!({"scope": "tenant-a"})).await;

    let (status, page) = app.get_json("/api/memories?limit=4").await;
    assert_eq!(status, 200);
    assert_eq!(page["total"], 11);
    assert_eq!(page["hasMore"], true);
    assert_eq!(page["memories"].as_array().unwrap().len(), 4);
    // Newest first.
    assert_eq!(page["memories"][0]["content"], "a decision about Beta");
    let (_, last) = app.get_json("/api/memories?limit=4&offset=8").await;
    assert_eq!(last["memories"].as_array().unwrap().len(), 3);
    assert_eq!(last["hasMore"], false);
    let (_, beyond) = app.get_json("/api/memories?offset=50").await;
    assert_eq!(
        (
            beyond["total"].as_i64(),
            beyond["memories"].as_array().unwrap().len()
        ),
        (Some(11), 0)
    );

    let (_, facts) = app.get_json("/api/memories?category=fact&limit=100").await;
    assert_eq!(facts["total"], 7);
    let (_, two) = app
        .get_json("/api/memories?category=preference,decision")
        .await;
    assert_eq!(two["total"], 4);
    let (_, alpha) = app.get_json("/api/memories?project=alpha").await;
    assert_eq!(alpha["total"], 7);
    let (_, none) = app
        .get_json("/api/memories?project=__memvault_no_project__")
        .await;
    assert_eq!(none["total"], 3);
    let (_, mixed) = app
        .get_json("/api/memories?project=beta,__memvault_no_project__")
        .await;
    assert_eq!(mixed["total"], 4);
    // Case-insensitive substring; LIKE wildcards are literal.
    let (_, search) = app
        .get_json("/api/memories?search=PREFERENCE%20number")
        .await;
    assert_eq!(search["total"], 3);
    let (_, wildcard) = app.get_json("/api/memories?search=%25").await;
    assert_eq!(wildcard["total"], 0);
    // Scope wall: only the unscoped lane without scope, only that scope with it.
    let (_, scoped) = app.get_json("/api/memories?scope=tenant-a").await;
    assert_eq!(scoped["total"], 1);
    assert_eq!(scoped["memories"][0]["scope"], "tenant-a");

    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=ten", "limit"),
        ("offset=-1", "offset"),
        ("category=opinion", "category"),
        ("includeExpired=maybe", "includeExpired"),
    ] {
        let response = app
            .send(Method::GET, &format!("/api/memories?{query}"))
            .await;
        assert_error(response, 400, field).await;
    }
    let response = app
        .send(
            Method::GET,
            &format!("/api/memories?search={}", "s".repeat(201)),
        )
        .await;
    assert_error(response, 400, "search").await;
    let response = app
        .send(
            Method::GET,
            &format!("/api/memories?scope={}", "s".repeat(201)),
        )
        .await;
    assert_error(response, 400, "scope").await;
}

#[tokio::test]
async fn expired_memories_are_listed_only_on_request() {
    let app = spawn_app().await;
    app.save(
        "old news",
        json!({"validFrom": "2020-01-01T00:00:00Z", "validUntil": "2021-01-01T00:00:00Z"}),
    )
    .await;
    app.save("still true", json!({"validUntil": "2999-01-01T00:00:00Z"}))
        .await;
    let (_, list) = app.get_json("/api/memories").await;
    assert_eq!(list["total"], 1);
    assert_eq!(list["memories"][0]["content"], "still true");
    let (_, all) = app.get_json("/api/memories?includeExpired=true").await;
    assert_eq!(all["total"], 2);
    let expired = all["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"] == "old news")
        .unwrap()
        .clone();
    assert_eq!(expired["validUntil"], "2021-01-01T00:00:00Z");
    // Saving the same content again renews it as the next version.
    let response = app
        .send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": "old news"}),
        )
        .await;
    let (status, renewed) = json_of(response).await;
    assert_eq!(status, 201);
    assert_eq!(renewed["status"], "superseded");
    assert_eq!(renewed["memory"]["supersedesId"], expired["id"]);
    let (_, list) = app.get_json("/api/memories").await;
    assert_eq!(list["total"], 2);
}

/// The exact-duplicate lookup is skipped for a text no live memory of the lane's index has
/// (`SearchEngine::may_hold`); a project edited in place moves the memory's key, so saving its
/// text again in the new project still finds it (an expired one is renewed there: the
/// near-duplicate check and the dedup index alone would answer `duplicate`).
#[tokio::test]
async fn an_expired_memory_moved_to_another_project_is_renewed_there() {
    let app = spawn_app().await;
    let old = app
        .save(
            "the office closes at noon on fridays",
            json!({"validFrom": "2020-01-01T00:00:00Z", "validUntil": "2021-01-01T00:00:00Z"}),
        )
        .await;
    let id = old["id"].as_str().unwrap();
    let response = app
        .send_json(
            Method::PATCH,
            &format!("/api/memories/{id}"),
            &json!({"project": "facilities"}),
        )
        .await;
    let (status, moved) = json_of(response).await;
    assert_eq!(status, 200, "{moved}");
    assert_eq!(moved["project"], "facilities");

    let again = |project: &str| json!({"content": "The office closes at noon on Fridays.", "project": project});
    let response = app
        .send_json(Method::POST, "/api/memories", &again("facilities"))
        .await;
    let (status, renewed) = json_of(response).await;
    assert_eq!(status, 201, "{renewed}");
    assert_eq!(renewed["status"], "superseded", "{renewed}");
    assert_eq!(renewed["memory"]["supersedesId"], id);
    // Nothing of it is left in its old project.
    let response = app
        .send_json(Method::POST, "/api/memories", &again(""))
        .await;
    let (status, fresh) = json_of(response).await;
    assert_eq!(status, 201, "{fresh}");
    assert_eq!(fresh["status"], "created", "{fresh}");
    // Saved again in the new project: the renewed version.
    let response = app
        .send_json(Method::POST, "/api/memories", &again("facilities"))
        .await;
    let (_, same) = json_of(response).await;
    assert_eq!(same["status"], "duplicate", "{same}");
    assert_eq!(same["memory"]["id"], renewed["memory"]["id"]);
}

#[tokio::test]
async fn patch_edits_in_place_or_makes_a_new_version() {
    let app = spawn_app().await;
    let v1 = app
        .save("I use vim", json!({"category": "preference"}))
        .await;
    let id = v1["id"].as_str().unwrap();
    // In place: same id and version.
    let response = app
        .send_json(
            Method::PATCH,
            &format!("/api/memories/{id}"),
            &json!({"category": "fact", "project": "editor", "validUntil": "2999-01-01T00:00:00Z"}),
        )
        .await;
    let (status, edited) = json_of(response).await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!(
        (edited["id"].as_str(), edited["version"].as_i64()),
        (Some(id), Some(1))
    );
    assert_eq!(edited["category"], "fact");
    assert_eq!(edited["project"], "editor");
    // null clears a date.
    let response = app
        .send_json(
            Method::PATCH,
            &format!("/api/memories/{id}"),
            &json!({"validUntil": null}),
        )
        .await;
    let (_, cleared) = json_of(response).await;
    assert!(cleared["validUntil"].is_null());
    // New content: a new version that keeps the edited fields.
    let response = app
        .send_json(
            Method::PATCH,
            &format!("/api/memories/{id}"),
            &json!({"content": "I use helix"}),
        )
        .await;
    let (status, v2) = json_of(response).await;
    assert_eq!(status, 200);
    assert_eq!(v2["version"], 2);
    assert_eq!(v2["supersedesId"], id);
    assert_eq!(v2["project"], "editor");
    // The old version can no longer be edited.
    let response = app
        .send_json(
            Method::PATCH,
            &format!("/api/memories/{id}"),
            &json!({"category": "context"}),
        )
        .await;
    assert_error(response, 409, "current version").await;
    // Validation and emptiness.
    let v2_id = v2["id"].as_str().unwrap();
    for (body, field) in [
        (json!({}), "body"),
        (json!({"content": ""}), "content"),
        (json!({"category": "x"}), "category"),
        (
            json!({"validFrom": "2999-06-01T00:00:00Z", "validUntil": "2999-01-01T00:00:00Z"}),
            "validUntil",
        ),
    ] {
        let response = app
            .send_json(Method::PATCH, &format!("/api/memories/{v2_id}"), &body)
            .await;
        assert_error(response, 400, field).await;
    }
    // Content equal to another current memory in the lane is refused.
    app.save("I use emacs", json!({"project": "editor"})).await;
    let response = app
        .send_json(
            Method::PATCH,
            &format!("/api/memories/{v2_id}"),
            &json!({"content": "I use emacs"}),
        )
        .await;
    assert_error(response, 409, "already holds this content").await;
    let (_, still) = app.get_json(&format!("/api/memories/{v2_id}")).await;
    assert_eq!(still["isCurrent"], true);
}

#[tokio::test]
async fn delete_and_forget_are_soft_and_final_for_retrieval() {
    let app = spawn_app().await;
    let a = app.save("memory a", json!({})).await;
    let b1 = app.save("memory b", json!({})).await;
    let response = app
        .send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": "memory b, revised", "supersedes": b1["id"]}),
        )
        .await;
    let (_, b2) = json_of(response).await;
    let b2 = &b2["memory"];

    let response = app
        .send(
            Method::DELETE,
            &format!("/api/memories/{}", a["id"].as_str().unwrap()),
        )
        .await;
    let (status, body) = json_of(response).await;
    assert_eq!((status, body), (200, json!({"success": true})));
    let response = app
        .send(
            Method::GET,
            &format!("/api/memories/{}", a["id"].as_str().unwrap()),
        )
        .await;
    assert_error(response, 404, "not found").await;
    let response = app
        .send(
            Method::DELETE,
            &format!("/api/memories/{}", a["id"].as_str().unwrap()),
        )
        .await;
    assert_error(response, 404, "not found").await;

    // Forget through the first version removes the whole chain.
    let response = app
        .send_json(
            Method::POST,
            &format!("/api/memories/{}/forget", b1["id"].as_str().unwrap()),
            &json!({"reason": "user asked"}),
        )
        .await;
    assert_eq!(json_of(response).await, (200, json!({"success": true})));
    for id in [&b1["id"], &b2["id"]] {
        let response = app
            .send(
                Method::GET,
                &format!("/api/memories/{}", id.as_str().unwrap()),
            )
            .await;
        assert_error(response, 404, "not found").await;
        let response = app
            .send(
                Method::GET,
                &format!("/api/memories/{}/history", id.as_str().unwrap()),
            )
            .await;
        assert_error(response, 404, "not found").await;
    }
    let (_, list) = app.get_json("/api/memories?includeExpired=true").await;
    assert_eq!(list["total"], 0);
    // Forget without a body works too.
    let c = app.save("memory c", json!({})).await;
    let response = app
        .send(
            Method::POST,
            &format!("/api/memories/{}/forget", c["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(response.status(), 200);
    // The content can be saved again as a new memory.
    let again = app.save("memory a", json!({})).await;
    assert_ne!(again["id"], a["id"]);
}

#[tokio::test]
async fn feedback_is_validated_and_changes_the_memory() {
    let app = spawn_app().await;
    let m = app.save("the build uses make", json!({})).await;
    let id = m["id"].as_str().unwrap();
    for rating in ["helpful", "not_helpful", "wrong"] {
        let response = app
            .send_json(
                Method::POST,
                &format!("/api/memories/{id}/feedback"),
                &json!({"rating": rating, "explanation": "because"}),
            )
            .await;
        assert_eq!(json_of(response).await, (200, json!({"success": true})));
    }
    for (body, field) in [
        (json!({}), "rating"),
        (json!({"rating": "meh"}), "rating"),
        (
            json!({"rating": "helpful", "explanation": "e".repeat(1001)}),
            "explanation",
        ),
    ] {
        let response = app
            .send_json(Method::POST, &format!("/api/memories/{id}/feedback"), &body)
            .await;
        assert_error(response, 400, field).await;
    }
    let response = app
        .send_json(
            Method::POST,
            &format!("/api/memories/{}/feedback", uuid::Uuid::new_v4()),
            &json!({"rating": "helpful"}),
        )
        .await;
    assert_error(response, 404, "not found").await;
    // `outdated` expires it now: gone from the default list, there with includeExpired.
    let response = app
        .send_json(
            Method::POST,
            &format!("/api/memories/{id}/feedback"),
            &json!({"rating": "outdated"}),
        )
        .await;
    assert_eq!(response.status(), 200);
    let (_, list) = app.get_json("/api/memories").await;
    assert_eq!(list["total"], 0);
    let (_, read) = app.get_json(&format!("/api/memories/{id}")).await;
    assert!(read["validUntil"].is_string());
    let (_, all) = app.get_json("/api/memories?includeExpired=true").await;
    assert_eq!(all["total"], 1);
}

#[tokio::test]
async fn scope_is_a_hard_wall() {
    let app = spawn_app().await;
    let a = app
        .save("tenant a secret", json!({"scope": "tenant-a"}))
        .await;
    let id = a["id"].as_str().unwrap();
    // Read, change, delete, forget, history, feedback from another scope or none: 404.
    for scope in ["", "?scope=tenant-b"] {
        let path = |suffix: &str| format!("/api/memories/{id}{suffix}{scope}");
        let r = app.send(Method::GET, &path("")).await;
        assert_error(r, 404, "not found").await;
        let r = app.send(Method::GET, &path("/history")).await;
        assert_error(r, 404, "not found").await;
        let r = app
            .send_json(Method::PATCH, &path(""), &json!({"content": "leak"}))
            .await;
        assert_error(r, 404, "not found").await;
        let r = app
            .send_json(
                Method::POST,
                &path("/feedback"),
                &json!({"rating": "wrong"}),
            )
            .await;
        assert_error(r, 404, "not found").await;
        let r = app.send(Method::POST, &path("/forget")).await;
        assert_error(r, 404, "not found").await;
        let r = app.send(Method::DELETE, &path("")).await;
        assert_error(r, 404, "not found").await;
    }
    // Superseding across scopes is refused too.
    let r = app
        .send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": "hijack", "scope": "tenant-b", "supersedes": id}),
        )
        .await;
    assert_error(r, 404, "not found").await;
    // Not counted elsewhere.
    let (_, unscoped) = app.get_json("/api/memories").await;
    assert_eq!(unscoped["total"], 0);
    let (_, b) = app.get_json("/api/memories?scope=tenant-b").await;
    assert_eq!(b["total"], 0);
    // Untouched in its own scope.
    let (status, read) = app
        .get_json(&format!("/api/memories/{id}?scope=tenant-a"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(read["content"], "tenant a secret");
    assert_eq!(read["version"], 1);
}

#[tokio::test]
async fn another_workspaces_memory_is_a_404() {
    let app = spawn_app().await;
    let mine = app.save("mine", json!({})).await;
    let (_, other_key) = app.other_workspace(None).await;
    let id = mine["id"].as_str().unwrap();
    let with_other = |method: Method, path: String| {
        app.client
            .request(method, app.url(&path))
            .header("X-API-Key", &other_key)
    };
    let r = with_other(Method::GET, format!("/api/memories/{id}"))
        .send()
        .await
        .unwrap();
    assert_error(r, 404, "not found").await;
    let r = with_other(Method::DELETE, format!("/api/memories/{id}"))
        .send()
        .await
        .unwrap();
    assert_error(r, 404, "not found").await;
    let r = with_other(Method::PATCH, format!("/api/memories/{id}"))
        .json(&json!({"content": "x"}))
        .send()
        .await
        .unwrap();
    assert_error(r, 404, "not found").await;
    let r = with_other(Method::GET, "/api/memories".to_string())
        .send()
        .await
        .unwrap();
    let (_, list) = json_of(r).await;
    assert_eq!(list["total"], 0);
    let (status, read) = app.get_json(&format!("/api/memories/{id}")).await;
    assert_eq!((status, read["content"].as_str()), (200, Some("mine")));
}

#[tokio::test]
async fn a_malformed_id_is_a_404() {
    let app = spawn_app().await;
    let r = app.send(Method::GET, "/api/memories/not-a-uuid").await;
    assert_error(r, 404, "not found").await;
}
