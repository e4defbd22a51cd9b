//! Retrieval with the real embedding model: search by meaning and by rare terms, scope walls,
//! exclusions, near-duplicates, automatic supersession, the long-note path.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};
use sqlx::Connection;
use uuid::Uuid;

use crate::helpers::{assert_error, json_of, spawn_app, TestApp};

/// Saves and returns `(status, memory)` of the 201 answer.
async fn save_status(app: &TestApp, body: Value) -> (String, Value) {
    let (status, json) = json_of(app.send_json(Method::POST, "/api/memories", &body).await).await;
    assert_eq!(status, 201, "save failed: {json}");
    (
        json["status"].as_str().unwrap().to_string(),
        json["memory"].clone(),
    )
}

async fn search(app: &TestApp, query: &str) -> Vec<Value> {
    let path = format!("/api/memories/search?{query}");
    let (status, body) = app.get_json(&path).await;
    assert_eq!(status, 200, "search failed: {body}");
    let results = body["results"].as_array().unwrap().clone();
    assert_eq!(body["total"], results.len());
    let scores: Vec<f64> = results
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert!(
        scores.iter().all(|s| (0.0..=1.0).contains(s)),
        "scores {scores:?}"
    );
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "best first: {scores:?}"
    );
    results
}

fn contents(results: &[Value]) -> Vec<&str> {
    results
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect()
}

fn q(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

const FACTS: &[&str] = &[
    "I moved to Berlin last spring.",
    "My favourite food is ramen.",
    "The staging deploy key is ZX-4471.",
    "We use PostgreSQL for the billing service.",
    "My daughter plays the violin.",
    "Standup is at 9:30 every weekday.",
];

#[tokio::test]
async fn search_finds_by_meaning_and_by_rare_terms() {
    let app = spawn_app().await;
    for fact in FACTS {
        app.save(fact, json!({})).await;
    }
    let by_meaning = search(&app, &format!("q={}", q("what city do I live in"))).await;
    assert_eq!(
        by_meaning[0]["content"],
        FACTS[0],
        "{:?}",
        contents(&by_meaning)
    );
    let music = search(
        &app,
        &format!("q={}", q("which instrument does my kid play")),
    )
    .await;
    assert_eq!(music[0]["content"], FACTS[4], "{:?}", contents(&music));
    let rare = search(&app, "q=ZX-4471").await;
    assert_eq!(rare[0]["content"], FACTS[2], "{:?}", contents(&rare));
    let keyword = search(&app, "q=billing&mode=keyword").await;
    assert_eq!(contents(&keyword), vec![FACTS[3]]);
    let semantic = search(&app, &format!("q={}&mode=semantic&limit=2", q("database"))).await;
    assert_eq!(semantic.len(), 2);
    assert_eq!(semantic[0]["content"], FACTS[3]);
    // The list item's fields come with the score.
    for field in [
        "id",
        "content",
        "source",
        "createdAt",
        "category",
        "version",
    ] {
        assert!(rare[0].get(field).is_some(), "missing {field}");
    }
}

#[tokio::test]
async fn search_never_crosses_a_scope_or_a_workspace() {
    let app = spawn_app().await;
    app.save(
        "The launch codename is Bluebird.",
        json!({"scope": "team-a"}),
    )
    .await;
    app.save(
        "The launch codename is Redwing.",
        json!({"scope": "team-b"}),
    )
    .await;
    app.save("The launch codename is Greenfinch.", json!({}))
        .await;
    let a = search(&app, "q=launch%20codename&scope=team-a").await;
    assert_eq!(contents(&a), vec!["The launch codename is Bluebird."]);
    let unscoped = search(&app, "q=launch%20codename").await;
    assert_eq!(
        contents(&unscoped),
        vec!["The launch codename is Greenfinch."]
    );
    let none = search(&app, "q=launch%20codename&scope=team-c").await;
    assert!(none.is_empty());

    let (_, other_key) = app.other_workspace(None).await;
    let response = app
        .client
        .get(app.url("/api/memories/search?q=launch%20codename&scope=team-a"))
        .header("X-API-Key", other_key)
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!(status, 200);
    assert!(body["results"].as_array().unwrap().is_empty(), "{body}");
}

#[tokio::test]
async fn search_filters_by_project_and_category() {
    let app = spawn_app().await;
    app.save(
        "Tea is my morning drink.",
        json!({"project": "home", "category": "preference"}),
    )
    .await;
    app.save(
        "Tea breaks happen at four.",
        json!({"project": "work", "category": "fact"}),
    )
    .await;
    app.save(
        "Tea with lemon when ill.",
        json!({"category": "preference"}),
    )
    .await;
    let home = search(&app, "q=tea&project=home").await;
    assert_eq!(contents(&home), vec!["Tea is my morning drink."]);
    let no_project = search(&app, "q=tea&project=__memvault_no_project__").await;
    assert_eq!(contents(&no_project), vec!["Tea with lemon when ill."]);
    let preferences = search(&app, "q=tea&category=preference").await;
    assert_eq!(preferences.len(), 2);
}

#[tokio::test]
async fn search_excludes_deleted_superseded_expired_and_wrong_memories() {
    let app = spawn_app().await;
    let deleted = app
        .save("The orchid needs water on Sundays.", json!({}))
        .await;
    let old = app
        .save("The orchid sits on the kitchen shelf.", json!({}))
        .await;
    let expired = app.save("The orchid is blooming purple.", json!({})).await;
    let wrong = app.save("The orchid came from Madeira.", json!({})).await;
    let kept = app
        .save("The orchid was a gift from Lena.", json!({}))
        .await;

    let id = |m: &Value| m["id"].as_str().unwrap().to_string();
    let response = app
        .send(Method::DELETE, &format!("/api/memories/{}", id(&deleted)))
        .await;
    assert_eq!(response.status(), 200);
    let (status, _) = save_status(
        &app,
        json!({"content": "The orchid sits on the bedroom windowsill.", "supersedes": id(&old)}),
    )
    .await;
    assert_eq!(status, "superseded");
    for (memory, rating) in [(&expired, "outdated"), (&wrong, "wrong")] {
        let response = app
            .send_json(
                Method::POST,
                &format!("/api/memories/{}/feedback", id(memory)),
                &json!({"rating": rating}),
            )
            .await;
        assert_eq!(response.status(), 200);
    }
    let found = search(&app, "q=orchid&limit=50").await;
    let mut found = contents(&found);
    found.sort();
    assert_eq!(
        found,
        vec![
            "The orchid sits on the bedroom windowsill.",
            "The orchid was a gift from Lena."
        ]
    );
    let _ = kept;
}

/// Marks memories deleted in the database only, behind the search index's back (as a crash
/// between a commit and the index, or another node's delete, leaves them).
async fn delete_behind_the_index(app: &TestApp, ids: &[Uuid]) {
    let sql = "UPDATE memories SET deleted_at = 1 WHERE id = $1";
    for id in ids {
        if app.db.url.starts_with("postgres") {
            let mut db = sqlx::PgConnection::connect(&app.db.url).await.unwrap();
            sqlx::query(sql).bind(id).execute(&mut db).await.unwrap();
        } else {
            let mut db = sqlx::SqliteConnection::connect(&app.db.url).await.unwrap();
            sqlx::query(sql).bind(id).execute(&mut db).await.unwrap();
        }
    }
}

#[tokio::test]
async fn stale_index_entries_do_not_cost_results() {
    let app = spawn_app().await;
    for text in [
        "The kayak is red.",
        "The kayak hangs in the garage.",
        "The kayak came with two paddles.",
        "The kayak was bought in May.",
    ] {
        let (status, _) = save_status(&app, json!({ "content": text })).await;
        assert_eq!(status, "created", "{text}");
    }
    let query = "q=kayak&limit=2&mode=keyword";
    let first: Vec<Uuid> = search(&app, query)
        .await
        .iter()
        .map(|m| m["id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(first.len(), 2);
    // The index still ranks the two first; the database has the last word, and the hits
    // after them fill the limit.
    delete_behind_the_index(&app, &first).await;
    let found = search(&app, query).await;
    let ids: Vec<Uuid> = found
        .iter()
        .map(|m| m["id"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{:?}", contents(&found));
    assert!(
        ids.iter().all(|id| !first.contains(id)),
        "{ids:?} {first:?}"
    );
}

#[tokio::test]
async fn feedback_moves_rankings() {
    let app = spawn_app().await;
    let a = app.save("Coffee order: flat white.", json!({})).await;
    let b = app.save("Coffee order: cortado.", json!({})).await;
    let rate = |memory: &Value, rating: &'static str| {
        let path = format!("/api/memories/{}/feedback", memory["id"].as_str().unwrap());
        let app = &app;
        async move {
            let response = app
                .send_json(Method::POST, &path, &json!({"rating": rating}))
                .await;
            assert_eq!(response.status(), 200);
        }
    };
    for _ in 0..3 {
        rate(&a, "not_helpful").await;
        rate(&b, "helpful").await;
    }
    let results = search(&app, "q=coffee%20order").await;
    assert_eq!(results[0]["id"], b["id"], "{:?}", contents(&results));
}

#[tokio::test]
async fn search_validates_its_parameters() {
    let app = spawn_app().await;
    for (path, field) in [
        ("/api/memories/search", "q"),
        ("/api/memories/search?q=", "q"),
        ("/api/memories/search?q=a&limit=0", "limit"),
        ("/api/memories/search?q=a&limit=51", "limit"),
        ("/api/memories/search?q=a&limit=ten", "limit"),
        ("/api/memories/search?q=a&mode=fuzzy", "mode"),
        ("/api/memories/search?q=a&category=mood", "category"),
    ] {
        assert_error(app.send(Method::GET, path).await, 400, field).await;
    }
    let long = "x".repeat(1_001);
    let response = app
        .send(Method::GET, &format!("/api/memories/search?q={long}"))
        .await;
    assert_error(response, 400, "q").await;
    let scope = "s".repeat(201);
    let response = app
        .send(
            Method::GET,
            &format!("/api/memories/search?q=a&scope={scope}"),
        )
        .await;
    assert_error(response, 400, "scope").await;
}

#[tokio::test]
async fn near_duplicates_return_the_existing_memory() {
    let app = spawn_app().await;
    let (status, first) = save_status(
        &app,
        json!({"content": "I prefer dark mode in my code editor.", "project": "ui"}),
    )
    .await;
    assert_eq!(status, "created");
    let (status, again) = save_status(
        &app,
        json!({"content": "i prefer dark mode in my code-editor", "project": "ui"}),
    )
    .await;
    assert_eq!(status, "duplicate");
    assert_eq!(again["id"], first["id"]);
    // Another project is another lane for dedup; different numbers are different memories.
    let (status, _) = save_status(
        &app,
        json!({"content": "I prefer dark mode in my code editor.", "project": "other"}),
    )
    .await;
    assert_eq!(status, "created");
    let (a, _) = save_status(
        &app,
        json!({"content": "Ticket 1041 is about the login page."}),
    )
    .await;
    let (b, _) = save_status(
        &app,
        json!({"content": "Ticket 1042 is about the login page."}),
    )
    .await;
    assert_eq!((a.as_str(), b.as_str()), ("created", "created"));
    let (_, list) = app.get_json("/api/memories?project=ui").await;
    assert_eq!(list["total"], 1);
}

#[tokio::test]
async fn an_updated_fact_supersedes_the_old_one_without_being_asked() {
    let app = spawn_app().await;
    let (_, paris) = save_status(&app, json!({"content": "I live in Paris."})).await;
    let (status, berlin) = save_status(&app, json!({"content": "I live in Berlin."})).await;
    assert_eq!(status, "superseded");
    assert_eq!(berlin["version"], 2);
    assert_eq!(berlin["supersedesId"], paris["id"]);
    let (status, _) = save_status(&app, json!({"content": "I like Paris in spring."})).await;
    assert_eq!(status, "created");

    let (status, tuesday) = save_status(&app, json!({"content": "Deploys are on Tuesday."})).await;
    assert_eq!(status, "created");
    let (status, thursday) =
        save_status(&app, json!({"content": "Deploys are on Thursday."})).await;
    assert_eq!(status, "superseded");
    assert_eq!(thursday["rootId"], tuesday["id"]);

    let results = search(&app, &format!("q={}", q("where do I live"))).await;
    let found = contents(&results);
    assert!(found.contains(&"I live in Berlin."), "{found:?}");
    assert!(!found.contains(&"I live in Paris."), "{found:?}");
    let (_, history) = app
        .get_json(&format!(
            "/api/memories/{}/history",
            berlin["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(history["history"][0]["content"], "I live in Paris.");
}

#[tokio::test]
async fn saves_without_a_category_get_one_inferred() {
    let app = spawn_app().await;
    let preference = app.save("I prefer tabs over spaces.", json!({})).await;
    assert_eq!(preference["category"], "preference");
    let decision = app
        .save("We decided to ship the beta on Friday.", json!({}))
        .await;
    assert_eq!(decision["category"], "decision");
    let given = app
        .save(
            "I prefer tabs over spaces in Go.",
            json!({"category": "fact"}),
        )
        .await;
    assert_eq!(given["category"], "fact");
}

/// Polls a job until it is finished.
pub async fn finished_job(app: &TestApp, job_id: &str) -> Value {
    for _ in 0..200 {
        let (status, job) = app.get_json(&format!("/api/memories/jobs/{job_id}")).await;
        assert_eq!(status, 200, "{job}");
        if job["finishedAt"].is_string() {
            return job;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("job {job_id} did not finish");
}

pub fn long_note() -> String {
    let mut note = String::from(
        "Notes from the planning meeting. Maria Lopez leads the mobile team. She wants the \
         release in March. We decided to drop support for Android 9. The backend team uses \
         Go and PostgreSQL. Um, okay. Our standup moves to 10:00 starting next week. ",
    );
    while note.chars().count() <= 1_000 {
        note.push_str("The design review for the onboarding flow happens every second Thursday. ");
    }
    note
}

#[tokio::test]
async fn a_long_note_becomes_atomic_memories_through_a_job() {
    let app = spawn_app().await;
    let (status, accepted) = json_of(
        app.send_json(
            Method::POST,
            "/api/memories",
            &json!({"content": long_note(), "scope": "planning", "project": "q1"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    assert!(accepted["message"].as_str().unwrap().contains("atomic"));
    let job = finished_job(&app, accepted["jobId"].as_str().unwrap()).await;
    assert_eq!(job["state"], "completed", "{job}");
    let parts = job["memories"].as_array().unwrap();
    assert!(parts.len() >= 6, "{job}");
    let texts: Vec<&str> = parts
        .iter()
        .map(|p| p["memory"]["content"].as_str().unwrap())
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("Maria Lopez leads the mobile team")),
        "{texts:?}"
    );
    // The subject is carried into the sentence that leaned on the previous one.
    assert!(
        texts
            .iter()
            .any(|t| t.contains("Maria") && t.contains("March")),
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|t| t.to_lowercase().starts_with("um")),
        "{texts:?}"
    );
    // The repeated sentence is saved once.
    let repeats = parts
        .iter()
        .filter(|p| p["content"].as_str().unwrap().contains("design review"))
        .count();
    assert!(repeats >= 1);
    let (_, list) = app.get_json("/api/memories?scope=planning&limit=100").await;
    let distinct: std::collections::HashSet<&str> = parts
        .iter()
        .map(|p| p["memory"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(list["total"], distinct.len());
    assert!(parts.iter().all(|p| p["memory"]["project"] == "q1"));
    // In the graph, the note's memories are chained by `same_note` links.
    let (_, graph) = app.get_json("/api/memories/graph?scope=planning").await;
    let same_note = graph["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["type"] == "same_note")
        .count();
    assert_eq!(same_note, distinct.len() - 1);
    // They are searchable.
    let found = search(&app, "q=android&scope=planning").await;
    assert!(contents(&found)[0].contains("Android 9"));
    // Another workspace cannot see the job.
    let (_, other_key) = app.other_workspace(None).await;
    let response = app
        .client
        .get(app.url(&format!(
            "/api/memories/jobs/{}",
            accepted["jobId"].as_str().unwrap()
        )))
        .header("X-API-Key", other_key)
        .send()
        .await
        .unwrap();
    assert_error(response, 404, "job").await;
}

#[tokio::test]
async fn an_unfinished_job_finishes_after_a_restart() {
    use memvault::model::JobRecord;
    let app = spawn_app().await;
    // A job as a server that stopped before running it left it.
    let at = chrono::Utc::now();
    let id = uuid::Uuid::now_v7();
    let request = json!({
        "content": long_note(), "category": null, "project": "", "validFrom": null,
        "validUntil": null, "source": "api"
    });
    app.store
        .insert_job(&JobRecord {
            id,
            workspace_id: app.workspace_id,
            user_id: "key:test".to_string(),
            scope: "resumed".to_string(),
            state: "queued".to_string(),
            request: request.to_string(),
            result: None,
            error: None,
            attempts: 0,
            created_at: at,
            updated_at: at,
            finished_at: None,
        })
        .await
        .unwrap();
    let app = app.restart().await;
    let job = finished_job(&app, &id.to_string()).await;
    assert_eq!(job["state"], "completed", "{job}");
    assert_eq!(job["attempts"], 1);
    let (_, list) = app.get_json("/api/memories?scope=resumed&limit=100").await;
    assert!(list["total"].as_i64().unwrap() >= 6, "{list}");
}

#[tokio::test]
async fn indexes_are_rebuilt_from_the_database_at_start_up() {
    let app = spawn_app().await;
    for fact in FACTS {
        app.save(fact, json!({"scope": "rebuild"})).await;
    }
    let gone = app
        .save(
            "The spare key is under the blue pot.",
            json!({"scope": "rebuild"}),
        )
        .await;
    let response = app
        .send(
            Method::DELETE,
            &format!(
                "/api/memories/{}?scope=rebuild",
                gone["id"].as_str().unwrap()
            ),
        )
        .await;
    assert_eq!(response.status(), 200);
    let app = app.restart().await;
    let results = search(
        &app,
        &format!("q={}&scope=rebuild", q("what city do I live in")),
    )
    .await;
    assert_eq!(results[0]["content"], FACTS[0]);
    let key = search(
        &app,
        "q=spare%20key%20blue%20pot&scope=rebuild&mode=keyword",
    )
    .await;
    assert!(
        !contents(&key).iter().any(|c| c.contains("spare key")),
        "{:?}",
        contents(&key)
    );
    assert_eq!(contents(&key), vec![FACTS[2]]);
}

#[tokio::test]
async fn the_profile_is_cached_until_a_write_in_its_scope() {
    use memvault::model::{Category, Lane, NewMemory, Source};
    let app = spawn_app().await;
    let tea = app
        .save("I prefer green tea.", json!({"category": "preference"}))
        .await;
    app.save(
        "We decided to write the indexer in Rust.",
        json!({"category": "decision"}),
    )
    .await;
    app.save(
        "Working on the Q3 launch plan this week.",
        json!({"category": "context"}),
    )
    .await;
    app.save(
        "I prefer aisle seats.",
        json!({"category": "preference", "scope": "travel"}),
    )
    .await;
    // Old context is not recent context.
    let old = chrono::Utc::now() - chrono::Duration::days(20);
    app.store
        .insert_memory(&NewMemory {
            id: uuid::Uuid::now_v7(),
            workspace_id: app.workspace_id,
            user_id: "key:test".to_string(),
            content: "Was debugging the importer.".to_string(),
            source: Source::Api,
            category: Category::Context,
            scope: String::new(),
            project: String::new(),
            valid_from: None,
            valid_until: None,
            created_at: old,
            origin_id: None,
            thread: String::new(),
            speaker: String::new(),
            embedding: None,
        })
        .await
        .unwrap();

    let (status, profile) = app.get_json("/api/memories/profile").await;
    assert_eq!(status, 200);
    assert_eq!(profile["static"], json!(["I prefer green tea."]));
    assert_eq!(
        profile["dynamic"],
        json!([
            "Working on the Q3 launch plan this week.",
            "We decided to write the indexer in Rust."
        ])
    );
    let (_, travel) = app.get_json("/api/memories/profile?scope=travel").await;
    assert_eq!(travel["static"], json!(["I prefer aisle seats."]));

    // A change behind the service's back is not seen: the profile comes from the cache.
    let lane = Lane {
        workspace_id: app.workspace_id,
        scope: String::new(),
    };
    let tea_id = uuid::Uuid::parse_str(tea["id"].as_str().unwrap()).unwrap();
    app.store.delete_memory(&lane, tea_id, 0).await.unwrap();
    let (_, cached) = app.get_json("/api/memories/profile").await;
    assert_eq!(cached, profile);
    // A write in another scope leaves it cached; a write in this scope refreshes it.
    app.save(
        "I prefer window seats on trains.",
        json!({"scope": "travel"}),
    )
    .await;
    let (_, still) = app.get_json("/api/memories/profile").await;
    assert_eq!(still, profile);
    app.save("I prefer oat milk.", json!({"category": "preference"}))
        .await;
    let (_, fresh) = app.get_json("/api/memories/profile").await;
    assert_eq!(fresh["static"], json!(["I prefer oat milk."]));
    // A project narrows it.
    app.save(
        "I prefer short standups.",
        json!({"category": "preference", "project": "work"}),
    )
    .await;
    let (_, work) = app.get_json("/api/memories/profile?project=work").await;
    assert_eq!(work["static"], json!(["I prefer short standups."]));
    assert_eq!(work["dynamic"], json!([]));
}

#[tokio::test]
async fn the_graph_links_similar_memories_and_shared_entities_with_exact_counts() {
    let app = spawn_app().await;
    for fact in [
        "Maria Lopez leads the mobile team.",
        "Maria Lopez wants the release in March.",
        "The mobile team ships a release every two weeks.",
        "I like green tea in the afternoon.",
    ] {
        app.save(fact, json!({"scope": "org"})).await;
    }
    app.save("Unrelated memory in another scope.", json!({}))
        .await;
    let (status, graph) = app.get_json("/api/memories/graph?scope=org").await;
    assert_eq!(status, 200, "{graph}");
    let nodes = graph["nodes"].as_array().unwrap();
    let links = graph["links"].as_array().unwrap();
    assert_eq!(nodes.len(), 4);
    assert_eq!(graph["meta"]["totalNodes"], 4);
    assert_eq!(graph["meta"]["totalLinks"], links.len());
    let derived = links.iter().filter(|l| l["derived"] == true).count();
    assert_eq!(graph["meta"]["derivedLinks"], derived);
    assert_eq!(graph["meta"]["relationLinks"], links.len() - derived);
    let ids: std::collections::HashSet<&str> =
        nodes.iter().map(|n| n["id"].as_str().unwrap()).collect();
    for node in nodes {
        let id = node["id"].as_str().unwrap();
        let touching = links
            .iter()
            .filter(|l| l["source"] == id || l["target"] == id)
            .count();
        assert_eq!(node["degree"], touching, "{node}");
    }
    for link in links {
        assert!(ids.contains(link["source"].as_str().unwrap()));
        assert!(ids.contains(link["target"].as_str().unwrap()));
        let strength = link["strength"].as_f64().unwrap();
        if link["derived"] == true {
            assert_eq!(link["type"], "similar");
            assert!((0.5..=1.0).contains(&strength), "{link}");
        } else {
            assert_eq!(strength, 1.0);
        }
    }
    let content_of = |id: &Value| {
        nodes
            .iter()
            .find(|n| n["id"] == *id)
            .map(|n| n["content"].as_str().unwrap().to_string())
            .unwrap()
    };
    let entity: Vec<_> = links
        .iter()
        .filter(|l| l["type"] == "same_entity")
        .collect();
    assert_eq!(entity.len(), 1, "{entity:?}");
    let mut pair = [
        content_of(&entity[0]["source"]),
        content_of(&entity[0]["target"]),
    ];
    pair.sort();
    assert_eq!(
        pair,
        [
            "Maria Lopez leads the mobile team.".to_string(),
            "Maria Lopez wants the release in March.".to_string()
        ]
    );
    let (_, small) = app.get_json("/api/memories/graph?scope=org&limit=2").await;
    assert_eq!(small["meta"]["totalNodes"], 2);
    assert_error(
        app.send(Method::GET, "/api/memories/graph?limit=501").await,
        400,
        "limit",
    )
    .await;
}

#[tokio::test]
async fn infer_false_stores_content_as_given() {
    let app = spawn_app().await;
    let (status, _) =
        save_status(&app, json!({"content": "I live in Paris.", "infer": false})).await;
    assert_eq!(status, "created");
    let (status, berlin) = save_status(
        &app,
        json!({"content": "I live in Berlin.", "infer": false}),
    )
    .await;
    assert_eq!(status, "created");
    assert_eq!(berlin["version"], 1);
    // No inferred category, no near-duplicate, but still no exact duplicate.
    let (status, liked) = save_status(
        &app,
        json!({"content": "I prefer tabs over spaces.", "infer": false}),
    )
    .await;
    assert_eq!(
        (status.as_str(), liked["category"].as_str()),
        ("created", Some("fact"))
    );
    let (status, _) = save_status(
        &app,
        json!({"content": "i prefer tabs over spaces", "infer": false}),
    )
    .await;
    assert_eq!(status, "duplicate");
    // A long note is one memory.
    let (status, long) = save_status(&app, json!({"content": long_note(), "infer": false})).await;
    assert_eq!(status, "created");
    assert!(long["content"].as_str().unwrap().chars().count() > 1_000);
    let (_, list) = app.get_json("/api/memories").await;
    assert_eq!(list["total"], 4);
}

#[tokio::test]
async fn concurrent_updates_of_one_fact_never_answer_409() {
    let app = spawn_app().await;
    save_status(&app, json!({"content": "I live in Paris."})).await;
    let cities = [
        "Rome", "Oslo", "Lima", "Kyiv", "Riga", "Bern", "Doha", "Baku",
    ];
    let tasks: Vec<_> = cities
        .iter()
        .map(|city| {
            let request = app
                .request(Method::POST, "/api/memories")
                .json(&json!({"content": format!("I live in {city}.")}));
            tokio::spawn(async move { request.send().await.unwrap().status().as_u16() })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), 201);
    }
}

/// Where `content` ranks among the results (`None`: not returned).
fn rank_of(results: &[Value], content: &str) -> Option<usize> {
    results.iter().position(|r| r["content"] == content)
}

#[tokio::test]
async fn a_thread_ranks_an_answer_with_its_question() {
    let app = spawn_app().await;
    const QUESTION: &str = "Will I need to pass an interview to volunteer at the animal shelter?";
    const ANSWER: &str = "No, nothing like that. Just show up on Saturday morning with gloves.";
    const OTHERS: &[&str] = &[
        "The shelter fundraiser raised four thousand dollars.",
        "I volunteer at the library on Sundays.",
        "My job interview at the bank went well.",
        "Saturday mornings are for long runs by the river.",
        "The animal hospital opens at eight.",
    ];
    // The same memories in two scopes; only in `chat` are the question and its answer one
    // thread (the others belong to none).
    for (scope, thread) in [("apart", None), ("chat", Some("chat-7"))] {
        for content in [QUESTION, ANSWER] {
            let mut body = json!({"content": content, "scope": scope, "infer": false});
            if let Some(thread) = thread {
                body["thread"] = json!(thread);
            }
            let (status, memory) = save_status(&app, body).await;
            assert_eq!(status, "created");
            assert_eq!(memory["thread"].as_str(), thread);
        }
        for content in OTHERS {
            app.save(content, json!({"scope": scope, "infer": false}))
                .await;
        }
    }
    let query = q("is an interview needed to volunteer at the shelter");
    let ranks = |results: &[Value]| (rank_of(results, QUESTION), rank_of(results, ANSWER));
    let apart = search(&app, &format!("q={query}&scope=apart&limit=10")).await;
    let chat = search(&app, &format!("q={query}&scope=chat&limit=10")).await;
    let (_, answer_apart) = ranks(&apart);
    assert_eq!(ranks(&chat), (Some(0), Some(1)), "{:?}", contents(&chat));
    assert_eq!(chat[1]["thread"], "chat-7");
    assert!(
        answer_apart.is_none_or(|rank| rank > 1),
        "without a thread the answer shares nothing with the query: {:?}",
        contents(&apart)
    );

    // Threads are stored: the ranking is the same after the indexes are rebuilt.
    let app = app.restart().await;
    let chat = search(&app, &format!("q={query}&scope=chat&limit=10")).await;
    assert_eq!(ranks(&chat), (Some(0), Some(1)), "{:?}", contents(&chat));

    // A new version named by `supersedes` stays in its predecessor's thread unless the save
    // names one.
    let answer = &chat[1];
    let (status, next) = save_status(
        &app,
        json!({"content": "No interview. Bring gloves on Saturday.", "scope": "chat",
               "supersedes": answer["id"]}),
    )
    .await;
    assert_eq!(
        (status.as_str(), next["thread"].as_str()),
        ("superseded", Some("chat-7"))
    );

    // A thread's current turns, newest first; other threads and other scopes stay out.
    let (status, list) = app.get_json("/api/memories?scope=chat&thread=chat-7").await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(
        contents(list["memories"].as_array().unwrap()),
        vec!["No interview. Bring gloves on Saturday.", QUESTION]
    );
    assert_eq!(list["total"], 2);
    let (_, none) = app
        .get_json("/api/memories?scope=apart&thread=chat-7")
        .await;
    assert_eq!(none["total"], 0, "{none}");

    // A thread name is at most 200 characters.
    let body = json!({"content": "A note.", "thread": "t".repeat(201)});
    let response = app.send_json(Method::POST, "/api/memories", &body).await;
    assert_error(response, 400, "thread").await;
    let response = app
        .send(
            Method::GET,
            &format!("/api/memories?thread={}", "t".repeat(201)),
        )
        .await;
    assert_error(response, 400, "thread").await;
}

// Caroline's turn says the same as Melanie's in fewer words: it matches the question better.
const CAROLINE: &str = "I signed up for a pottery class.";
const MELANIE: &str = "I signed up for a pottery class at the community centre last week.";

/// Where Caroline's and Melanie's turns rank in the scope `friends`, with the results.
async fn speaker_ranks(app: &TestApp, query: &str) -> ((Option<usize>, Option<usize>), Vec<Value>) {
    let results = search(app, &format!("q={query}&scope=friends")).await;
    let order = (rank_of(&results, CAROLINE), rank_of(&results, MELANIE));
    (order, results)
}

#[tokio::test]
async fn a_query_naming_a_speaker_ranks_what_that_speaker_said_first() {
    let app = spawn_app().await;
    for (content, speaker) in [(CAROLINE, "Caroline"), (MELANIE, "Melanie")] {
        let body = json!({"content": content, "scope": "friends", "speaker": speaker,
                          "infer": false});
        let (status, memory) = save_status(&app, body).await;
        assert_eq!(status, "created");
        assert_eq!(memory["speaker"], speaker);
    }
    app.save(
        "The community centre closes at nine.",
        json!({"scope": "friends", "infer": false}),
    )
    .await;
    let unnamed = q("which pottery class did she sign up for");
    let named = q("which pottery class did Melanie sign up for");
    let (order, results) = speaker_ranks(&app, &unnamed).await;
    assert_eq!(order, (Some(0), Some(1)), "{:?}", contents(&results));
    let (order, results) = speaker_ranks(&app, &named).await;
    assert_eq!(order, (Some(1), Some(0)), "{:?}", contents(&results));
    assert_eq!(results[0]["speaker"], "Melanie");

    // Speakers are stored: the same after the indexes are rebuilt from the database.
    let app = app.restart().await;
    let (order, results) = speaker_ranks(&app, &named).await;
    assert_eq!(order, (Some(1), Some(0)), "{:?}", contents(&results));

    // A new version keeps its predecessor's speaker unless the save names one.
    let (status, next) = save_status(
        &app,
        json!({"content": "I signed up for a pottery class on Monday.", "scope": "friends",
               "supersedes": results[1]["id"]}),
    )
    .await;
    assert_eq!(
        (status.as_str(), next["speaker"].as_str()),
        ("superseded", Some("Caroline"))
    );

    // "I" is someone else when the speaker differs: no fact update across speakers, one within.
    let said = |content: &str, speaker: &str| json!({"content": content, "scope": "home", "speaker": speaker});
    let (status, berlin) = save_status(&app, said("I live in Berlin.", "Caroline")).await;
    assert_eq!(status, "created");
    let (status, _) = save_status(&app, said("I live in Paris.", "Melanie")).await;
    assert_eq!(status, "created");
    let (status, munich) = save_status(&app, said("I live in Munich.", "caroline")).await;
    assert_eq!(status, "superseded");
    assert_eq!(munich["supersedesId"], berlin["id"]);
    // New content by PATCH: a new version by the same speaker.
    let id = munich["id"].as_str().unwrap();
    let body = json!({"content": "I live in Munich, near the river."});
    let response = app
        .send_json(
            Method::PATCH,
            &format!("/api/memories/{id}?scope=home"),
            &body,
        )
        .await;
    let (status, edited) = json_of(response).await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!(
        (edited["version"].as_i64(), edited["speaker"].as_str()),
        (Some(3), Some("caroline"))
    );

    // A speaker's name is at most 100 characters.
    let body = json!({"content": "A note.", "speaker": "s".repeat(101)});
    let response = app.send_json(Method::POST, "/api/memories", &body).await;
    assert_error(response, 400, "speaker").await;
}
