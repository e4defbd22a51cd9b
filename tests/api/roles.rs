//! Roles and walls: every endpoint against every role, both ways in (session cookie and API
//! key), as the role matrix of `decisions.md` says; and a stranger guessing another
//! workspace's ids at random (seeded, replayable) learns nothing and changes nothing.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use memvault::config::Switch;
use memvault::model::accounts::Need;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use reqwest::multipart::{Form, Part};
use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::helpers::{json_of, spawn_app_with, TestApp, TestUser};

// ----- shared plumbing -----------------------------------------------------------------------

/// A server without rate limits (hundreds of requests from one workspace) and with a cheaper
/// password hash (many sign-ups).
async fn spawn() -> TestApp {
    spawn_app_with(|s| {
        s.accounts.rate_limits = Switch::Off;
        s.accounts.password_memory_kib = 8 * 1024;
    })
    .await
}

/// How a request comes in.
#[derive(Clone, Copy)]
enum Way<'a> {
    Cookie(&'a TestUser),
    Key(&'a str),
}

impl Way<'_> {
    fn name(&self) -> &'static str {
        match self {
            Way::Cookie(_) => "cookie",
            Way::Key(_) => "key",
        }
    }
}

/// What a request carries.
#[derive(Clone, Debug)]
enum Payload {
    Empty,
    Json(Value),
    /// A multipart upload: text parts, and a small text file.
    Upload {
        fields: Vec<(String, String)>,
        file_name: String,
        file: String,
    },
    /// An `application/x-www-form-urlencoded` body.
    Form(String),
}

/// One concrete request.
#[derive(Clone, Debug)]
struct Call {
    method: Method,
    /// Path and query.
    path: String,
    payload: Payload,
}

impl Call {
    /// Everything the request says, as text (to look for ids in it).
    fn text(&self) -> String {
        let payload = match &self.payload {
            Payload::Empty => String::new(),
            Payload::Json(value) => value.to_string(),
            Payload::Upload {
                fields,
                file_name,
                file,
            } => format!("{fields:?} {file_name} {file}"),
            Payload::Form(text) => text.clone(),
        };
        format!("{} {} {payload}", self.method, self.path)
    }

    /// The same request with every occurrence of `from` replaced by `to`.
    fn replaced(&self, swaps: &[(String, String)]) -> Call {
        let swap = |text: &str| {
            swaps
                .iter()
                .fold(text.to_string(), |acc, (from, to)| acc.replace(from, to))
        };
        let payload = match &self.payload {
            Payload::Empty => Payload::Empty,
            Payload::Json(value) => {
                Payload::Json(serde_json::from_str(&swap(&value.to_string())).unwrap())
            }
            Payload::Upload {
                fields,
                file_name,
                file,
            } => Payload::Upload {
                fields: fields.iter().map(|(k, v)| (k.clone(), swap(v))).collect(),
                file_name: file_name.clone(),
                file: file.clone(),
            },
            Payload::Form(text) => Payload::Form(swap(text)),
        };
        Call {
            method: self.method.clone(),
            path: swap(&self.path),
            payload,
        }
    }
}

/// Sends `call` as `way`; returns the status and the body as text.
async fn send(app: &TestApp, way: Way<'_>, call: &Call) -> (u16, String) {
    let builder = match way {
        Way::Cookie(user) => app.as_user(user, call.method.clone(), &call.path),
        Way::Key(key) => app.with_key(key, call.method.clone(), &call.path),
    };
    let builder = match &call.payload {
        Payload::Empty => builder,
        Payload::Json(value) => builder.json(value),
        Payload::Upload {
            fields,
            file_name,
            file,
        } => {
            let mut form = Form::new().part(
                "file",
                Part::bytes(file.clone().into_bytes()).file_name(file_name.clone()),
            );
            for (name, value) in fields {
                form = form.text(name.clone(), value.clone());
            }
            builder.multipart(form)
        }
        Payload::Form(text) => builder
            .header("content-type", "application/x-www-form-urlencoded")
            .body(text.clone()),
    };
    let response = builder.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// Sends a JSON request that must answer `expected`; returns the JSON.
async fn must(app: &TestApp, way: Way<'_>, method: Method, path: &str, body: Value) -> Value {
    let call = Call {
        method,
        path: path.to_string(),
        payload: if body.is_null() {
            Payload::Empty
        } else {
            Payload::Json(body)
        },
    };
    let (status, text) = send(app, way, &call).await;
    assert!(
        (200..300).contains(&status),
        "{} {} answered {status}: {text}",
        call.method,
        call.path
    );
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
}

/// Replaces every `{name}` of `vars` in `text`.
fn fill(text: &str, vars: &HashMap<&str, String>) -> String {
    vars.iter().fold(text.to_string(), |acc, (name, value)| {
        acc.replace(&format!("{{{name}}}"), value)
    })
}

/// [`fill`] on every string of a JSON template.
fn fill_value(template: &Value, vars: &HashMap<&str, String>) -> Value {
    match template {
        Value::String(text) => Value::String(fill(text, vars)),
        Value::Array(items) => Value::Array(items.iter().map(|v| fill_value(v, vars)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), fill_value(v, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn with_query(path: &str, name: &str, value: &str) -> String {
    let glue = if path.contains('?') { '&' } else { '?' };
    format!("{path}{glue}{name}={value}")
}

/// Where an endpoint reads `workspaceId` (for a cookie caller).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WsIn {
    Query,
    Body,
    Form,
    /// In the path (`/api/workspaces/{id}/...`, `/billing/portal/{id}`), or nowhere.
    Path,
}

/// A request body template.
#[derive(Clone, Debug)]
enum Body {
    Empty,
    Json(Value),
    /// A multipart upload of a small text file, with a title.
    Upload,
    /// A form body.
    Form(&'static str),
}

/// Builds the request for a template: placeholders filled, and `workspaceId` (when given)
/// where the endpoint reads it.
fn build(
    method: &Method,
    path: &str,
    body: &Body,
    ws_in: WsIn,
    workspace: Option<&str>,
    vars: &HashMap<&str, String>,
) -> Call {
    let mut path = fill(path, vars);
    if let (WsIn::Query, Some(ws)) = (ws_in, workspace) {
        path = with_query(&path, "workspaceId", ws);
    }
    let payload = match body {
        Body::Empty => match (ws_in, workspace) {
            (WsIn::Body, Some(ws)) => Payload::Json(json!({ "workspaceId": ws })),
            _ => Payload::Empty,
        },
        Body::Json(template) => {
            let mut value = fill_value(template, vars);
            if let (WsIn::Body, Some(ws)) = (ws_in, workspace) {
                value["workspaceId"] = Value::from(ws);
            }
            Payload::Json(value)
        }
        Body::Upload => {
            let n = vars.get("n").cloned().unwrap_or_default();
            let mut fields = vec![("title".to_string(), format!("Uploaded notes {n}"))];
            if let Some(vault) = vars.get("vault") {
                fields.push(("vaultId".to_string(), vault.clone()));
            }
            if let (WsIn::Form, Some(ws)) = (ws_in, workspace) {
                fields.push(("workspaceId".to_string(), ws.to_string()));
            }
            Payload::Upload {
                fields,
                file_name: format!("notes-{n}.txt"),
                file: format!("Upload {n}: the loading dock closes at six on Fridays."),
            }
        }
        Body::Form(template) => Payload::Form(fill(template, vars)),
    };
    Call {
        method: method.clone(),
        path,
        payload,
    }
}

/// Polls a document until it leaves pending/processing/retrying.
async fn settle_document(app: &TestApp, key: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let detail = must(
            app,
            Way::Key(key),
            Method::GET,
            &format!("/api/context-vault/documents/{id}"),
            Value::Null,
        )
        .await;
        let status = detail["document"]["status"].as_str().unwrap().to_string();
        if ["completed", "failed", "cancelled"].contains(&status.as_str()) {
            return detail;
        }
        assert!(Instant::now() < deadline, "document {id} stuck: {detail}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls a long-note job until it is done.
async fn settle_job(app: &TestApp, key: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let job = must(
            app,
            Way::Key(key),
            Method::GET,
            &format!("/api/memories/jobs/{id}"),
            Value::Null,
        )
        .await;
        if job["state"] == "completed" || job["state"] == "failed" {
            return job;
        }
        assert!(Instant::now() < deadline, "job {id} stuck: {job}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A note over 1,000 characters (the 202 path), one sentence per topic.
fn long_note(team: &str, marker: &str) -> String {
    let topics = [
        "The staging database",
        "The design review",
        "The office plant rota",
        "The quarterly budget",
        "The release train",
        "The support rota",
        "The espresso machine",
        "The VPN gateway",
        "The hiring plan",
        "The security audit",
        "The customer survey",
        "The team offsite",
    ];
    let note = topics
        .iter()
        .enumerate()
        .map(|(i, topic)| {
            format!(
                "{topic} of the {team} team is filed under code {marker}-{}{i}, which only the team may read.",
                i * 37 + 11
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    assert!(note.chars().count() > 1000, "{}", note.len());
    note
}

// ----- 1. the role matrix ---------------------------------------------------------------------

/// Whether `role` may do what `need` names: the table of `decisions.md`, written out here
/// (not taken from the server's own code).
fn matrix_allows(role: &str, need: Need) -> bool {
    let allowed: &[&str] = match need {
        Need::Read => &["owner", "admin", "member", "viewer"],
        Need::Write => &["owner", "admin", "member"],
        Need::Manage => &["owner", "admin"],
        Need::Own => &["owner"],
    };
    allowed.contains(&role)
}

/// What a destructive or targeted call needs made for it first (by the owner).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fresh {
    Nothing,
    Memory,
    Document,
    /// A document cancelled at once (retry takes it back), or completed when too late.
    CancelledDocument,
    /// A member with the `member` role.
    Member,
    /// A second owner.
    CoOwner,
    Invitation,
    Key,
}

struct Row {
    name: &'static str,
    method: Method,
    path: &'static str,
    body: Body,
    ws: WsIn,
    need: Need,
    fresh: Fresh,
    /// Subscription endpoints (and creating a workspace): a key is 401.
    cookie_only: bool,
    /// What an allowed call answers.
    ok: &'static [u16],
}

fn row(name: &'static str, method: Method, path: &'static str, need: Need) -> Row {
    let ok: &'static [u16] = match method {
        Method::POST => &[200, 201, 202],
        _ => &[200],
    };
    let ws = if path.starts_with("/api/workspaces/") || path.starts_with("/billing/") {
        WsIn::Path
    } else {
        WsIn::Query
    };
    Row {
        name,
        method,
        path,
        body: Body::Empty,
        ws,
        need,
        fresh: Fresh::Nothing,
        cookie_only: false,
        ok,
    }
}

impl Row {
    fn json(mut self, body: Value) -> Self {
        self.body = Body::Json(body);
        self
    }
    fn ws(mut self, ws: WsIn) -> Self {
        self.ws = ws;
        self
    }
    fn fresh(mut self, fresh: Fresh) -> Self {
        self.fresh = fresh;
        self
    }
    fn cookie_only(mut self) -> Self {
        self.cookie_only = true;
        self
    }
    fn ok(mut self, ok: &'static [u16]) -> Self {
        self.ok = ok;
        self
    }
    fn upload(mut self) -> Self {
        self.body = Body::Upload;
        self
    }
    fn form(mut self, form: &'static str) -> Self {
        self.body = Body::Form(form);
        self
    }
}

/// Every endpoint a workspace member can reach, with what it needs.
fn matrix_rows() -> Vec<Row> {
    use Method as M;
    use Need::{Manage, Own, Read, Write};
    vec![
        // memories
        row("save a memory", M::POST, "/api/memories", Write)
            .json(json!({"content": "Matrix note {n}: rack {n} of the build farm was rebooted", "infer": false}))
            .ws(WsIn::Body)
            .ok(&[201]),
        row("list memories", M::GET, "/api/memories", Read),
        row("search memories", M::GET, "/api/memories/search?q=wifi", Read),
        row("profile", M::GET, "/api/memories/profile", Read),
        row("graph", M::GET, "/api/memories/graph", Read),
        row("long-note job", M::GET, "/api/memories/jobs/{job}", Read),
        row("get a memory", M::GET, "/api/memories/{memory}", Read),
        row("memory history", M::GET, "/api/memories/{memory}/history", Read),
        row("patch a memory", M::PATCH, "/api/memories/{target}", Write)
            .json(json!({"category": "decision"}))
            .fresh(Fresh::Memory),
        row("delete a memory", M::DELETE, "/api/memories/{target}", Write).fresh(Fresh::Memory),
        row("forget a memory", M::POST, "/api/memories/{target}/forget", Write)
            .json(json!({"reason": "role matrix"}))
            .fresh(Fresh::Memory)
            .ok(&[200]),
        row("memory feedback", M::POST, "/api/memories/{memory}/feedback", Write)
            .json(json!({"rating": "helpful"}))
            .ok(&[200]),
        // context vault
        row("list vaults", M::GET, "/api/context-vault/vaults", Read),
        row("create a vault", M::POST, "/api/context-vault/vaults", Write)
            .json(json!({"name": "matrix vault {n}"}))
            .ws(WsIn::Body)
            .ok(&[201]),
        row("list documents", M::GET, "/api/context-vault/documents", Read),
        row("create a document", M::POST, "/api/context-vault/documents", Write)
            .json(json!({
                "title": "Matrix document {n}",
                "sourceType": "text",
                "content": "Matrix document {n}: the canteen opens at eight and closes at three."
            }))
            .ws(WsIn::Body)
            .ok(&[202]),
        row("upload a document", M::POST, "/api/context-vault/documents/upload", Write)
            .upload()
            .ws(WsIn::Form)
            .ok(&[202]),
        row("get a document", M::GET, "/api/context-vault/documents/{doc}", Read),
        row("document memories", M::GET, "/api/context-vault/documents/{doc}/memories", Read),
        row("delete a document", M::DELETE, "/api/context-vault/documents/{target}", Write)
            .fresh(Fresh::Document),
        row("cancel a document", M::POST, "/api/context-vault/documents/{target}/cancel", Write)
            .fresh(Fresh::Document)
            // 409 when the document was already completed: allowed, nothing left to stop.
            .ok(&[200, 409]),
        row("retry a document", M::POST, "/api/context-vault/documents/{target}/retry", Write)
            .fresh(Fresh::CancelledDocument)
            .ok(&[200, 409]),
        row("vault search", M::GET, "/api/context-vault/search?q=canteen", Read),
        row("browse vault memories", M::GET, "/api/context-vault/memories", Read),
        row("add a company fact", M::POST, "/api/context-vault/memories", Write)
            .json(json!({"content": "Matrix fact {n}: the office has {n} meeting rooms."}))
            .ws(WsIn::Body)
            .ok(&[201]),
        row("fact feedback", M::POST, "/api/context-vault/memories/{fact}/feedback", Write)
            .json(json!({"rating": "helpful"}))
            .ws(WsIn::Body)
            .ok(&[200]),
        // workspaces
        row("list workspaces", M::GET, "/api/workspaces", Read).ws(WsIn::Path),
        row("create a workspace", M::POST, "/api/workspaces", Read)
            .json(json!({"name": "Matrix workspace {n}"}))
            .ws(WsIn::Path)
            .cookie_only()
            .ok(&[201]),
        row("team", M::GET, "/api/workspaces/{W}/team", Read),
        row("change a member's role", M::PATCH, "/api/workspaces/{W}/members/{target}", Manage)
            .json(json!({"role": "viewer"}))
            .fresh(Fresh::Member),
        row("demote an owner", M::PATCH, "/api/workspaces/{W}/members/{target}", Own)
            .json(json!({"role": "admin"}))
            .fresh(Fresh::CoOwner),
        row("make an owner", M::PATCH, "/api/workspaces/{W}/members/{target}", Own)
            .json(json!({"role": "owner"}))
            .fresh(Fresh::Member),
        row("remove a member", M::DELETE, "/api/workspaces/{W}/members/{target}", Manage)
            .fresh(Fresh::Member),
        row("remove an owner", M::DELETE, "/api/workspaces/{W}/members/{target}", Own)
            .fresh(Fresh::CoOwner),
        row("invite", M::POST, "/api/workspaces/{W}/invitations", Manage)
            .json(json!({"email": "invited-{n}@example.com", "role": "member"}))
            .ok(&[201]),
        row("revoke an invitation", M::DELETE, "/api/workspaces/{W}/invitations/{target}", Manage)
            .fresh(Fresh::Invitation),
        row("list API keys", M::GET, "/api/workspaces/{W}/api-keys", Manage),
        row("create an API key", M::POST, "/api/workspaces/{W}/api-keys", Manage)
            .json(json!({"name": "matrix key {n}"}))
            .ok(&[201]),
        row("revoke an API key", M::DELETE, "/api/workspaces/{W}/api-keys/{target}", Manage)
            .fresh(Fresh::Key),
        // subscription (cookie only)
        row("current subscription", M::GET, "/api/subscription/current", Read).cookie_only(),
        row("checkout", M::POST, "/api/subscription/checkout", Own)
            .json(json!({"plan": "pro"}))
            .ws(WsIn::Body)
            .cookie_only()
            .ok(&[200]),
        row("billing portal", M::POST, "/api/subscription/portal", Own)
            .json(json!({}))
            .ws(WsIn::Body)
            .cookie_only()
            .ok(&[200]),
        // The plan it is already on: the workspace stays as it is.
        row("change plan", M::POST, "/api/subscription/change-plan", Own)
            .json(json!({"plan": "free"}))
            .ws(WsIn::Body)
            .cookie_only()
            .ok(&[200]),
        row("billing portal page", M::GET, "/billing/portal/{W}", Read).cookie_only(),
        row("billing portal plan switch", M::POST, "/billing/portal/{W}/plan", Own)
            .form("plan=free")
            .cookie_only()
            // 303 to the portal page, which the client follows.
            .ok(&[200, 303]),
    ]
}

/// The workspace under test, its owner and what the owner made in it.
struct Matrix {
    app: TestApp,
    owner: TestUser,
    owner_key: String,
    workspace: String,
    counter: u32,
}

impl Matrix {
    fn next(&mut self) -> u32 {
        self.counter += 1;
        self.counter
    }

    async fn owner_json(&self, method: Method, path: &str, body: Value) -> Value {
        must(&self.app, Way::Cookie(&self.owner), method, path, body).await
    }

    async fn key_json(&self, method: Method, path: &str, body: Value) -> Value {
        must(&self.app, Way::Key(&self.owner_key), method, path, body).await
    }

    async fn new_document(&mut self) -> String {
        let n = self.next();
        let accepted = self
            .key_json(
                Method::POST,
                "/api/context-vault/documents",
                json!({
                    "title": format!("Target document {n}"),
                    "sourceType": "text",
                    "content": format!("Target document {n}: the parking garage has {n} spaces for bikes."),
                }),
            )
            .await;
        accepted["document"]["id"].as_str().unwrap().to_string()
    }

    /// A new user made a member of the workspace with `role`; their membership id.
    async fn new_member(&mut self, role: &str) -> String {
        let n = self.next();
        let user = self.app.sign_up(&format!("target-{n}@example.com")).await;
        let ws: Uuid = self.workspace.parse().unwrap();
        self.app
            .add_member(&self.owner, ws, &user, role)
            .await
            .to_string()
    }

    /// Makes what a row acts on, as the owner.
    async fn make(&mut self, fresh: Fresh) -> Option<String> {
        let ws = self.workspace.clone();
        Some(match fresh {
            Fresh::Nothing => return None,
            Fresh::Memory => {
                let n = self.next();
                let saved = self
                    .key_json(
                        Method::POST,
                        "/api/memories",
                        json!({
                            "content": format!("Target memory {n}: locker {n} holds the spare badge of desk {}", n * 7),
                            "infer": false,
                        }),
                    )
                    .await;
                saved["memory"]["id"].as_str().unwrap().to_string()
            }
            Fresh::Document => self.new_document().await,
            Fresh::CancelledDocument => {
                let id = self.new_document().await;
                // Cancelled when still running; when it already finished, retry answers 409.
                let call = Call {
                    method: Method::POST,
                    path: format!("/api/context-vault/documents/{id}/cancel"),
                    payload: Payload::Empty,
                };
                let (status, text) = send(&self.app, Way::Key(&self.owner_key), &call).await;
                assert!(status == 200 || status == 409, "cancel: {status} {text}");
                id
            }
            Fresh::Member => self.new_member("member").await,
            Fresh::CoOwner => {
                let id = self.new_member("admin").await;
                let changed = self
                    .owner_json(
                        Method::PATCH,
                        &format!("/api/workspaces/{ws}/members/{id}"),
                        json!({"role": "owner"}),
                    )
                    .await;
                assert_eq!(changed["member"]["role"], "owner", "{changed}");
                id
            }
            Fresh::Invitation => {
                let n = self.next();
                let invited = self
                    .owner_json(
                        Method::POST,
                        &format!("/api/workspaces/{ws}/invitations"),
                        json!({"email": format!("pending-{n}@example.com"), "role": "viewer"}),
                    )
                    .await;
                invited["invitation"]["id"].as_str().unwrap().to_string()
            }
            Fresh::Key => {
                let n = self.next();
                let created = self
                    .owner_json(
                        Method::POST,
                        &format!("/api/workspaces/{ws}/api-keys"),
                        json!({"name": format!("target key {n}")}),
                    )
                    .await;
                created["apiKey"]["id"].as_str().unwrap().to_string()
            }
        })
    }
}

#[tokio::test]
async fn every_endpoint_answers_every_role_as_the_matrix_says() {
    let app = spawn().await;
    let owner = app.sign_up("owner@example.com").await;
    let ws = owner.workspace_id;
    let admin = app.sign_up("admin@example.com").await;
    let member = app.sign_up("member@example.com").await;
    let viewer = app.sign_up("viewer@example.com").await;
    app.add_member(&owner, ws, &admin, "admin").await;
    // Members and viewers cannot make keys: they make theirs as admins and are then demoted,
    // so their keys act with their current role (a key never acts above its maker).
    let member_id = app.add_member(&owner, ws, &member, "admin").await;
    let viewer_id = app.add_member(&owner, ws, &viewer, "admin").await;
    let owner_key = app.create_key(&owner, ws, None).await;
    let admin_key = app.create_key(&admin, ws, None).await;
    let member_key = app.create_key(&member, ws, None).await;
    let viewer_key = app.create_key(&viewer, ws, None).await;
    for (id, role) in [(member_id, "member"), (viewer_id, "viewer")] {
        let changed = must(
            &app,
            Way::Cookie(&owner),
            Method::PATCH,
            &format!("/api/workspaces/{ws}/members/{id}"),
            json!({ "role": role }),
        )
        .await;
        assert_eq!(changed["member"]["role"], role, "{changed}");
    }
    // Weakest first: a refused call leaves its target for the next caller, so a refusal that
    // still acted would show as a failure of the allowed call after it.
    let callers = [
        ("viewer", &viewer, viewer_key),
        ("member", &member, member_key),
        ("admin", &admin, admin_key),
        ("owner", &owner, owner_key.clone()),
    ];
    for (role, user, key) in &callers {
        let team = must(
            &app,
            Way::Cookie(user),
            Method::GET,
            &format!("/api/workspaces/{ws}/team"),
            Value::Null,
        )
        .await;
        assert_eq!(team["currentUserRole"], *role, "{team}");
        let listed = must(
            &app,
            Way::Key(key),
            Method::GET,
            "/api/workspaces",
            Value::Null,
        )
        .await;
        assert_eq!(listed["workspaces"][0]["id"], ws.to_string(), "{listed}");
        assert_eq!(listed["workspaces"][0]["role"], *role, "{listed}");
    }

    let mut matrix = Matrix {
        app,
        owner: owner.clone(),
        owner_key: owner_key.clone(),
        workspace: ws.to_string(),
        counter: 0,
    };
    // What the read rows read, made by the owner.
    let memory = matrix
        .key_json(
            Method::POST,
            "/api/memories",
            json!({"content": "The office wifi network is called Lighthouse", "infer": false}),
        )
        .await["memory"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let job = matrix
        .key_json(
            Method::POST,
            "/api/memories",
            json!({"content": long_note("matrix", "MATRIX")}),
        )
        .await["jobId"]
        .as_str()
        .expect("a long note is a job")
        .to_string();
    let doc = matrix.new_document().await;
    let fact = matrix
        .key_json(
            Method::POST,
            "/api/context-vault/memories",
            json!({"content": "The company canteen serves lunch from noon."}),
        )
        .await["memory"]["id"]
        .as_str()
        .unwrap()
        .to_string();

    let rows = matrix_rows();
    let mut failures = Vec::new();
    let mut checked = 0;
    // Targets made for a row and left untouched by a refusal, for the next caller.
    let mut spare: HashMap<usize, String> = HashMap::new();
    for (index, row) in rows.iter().enumerate() {
        for (role, user, key) in &callers {
            for way in [Way::Cookie(user), Way::Key(key)] {
                let target = match spare.remove(&index) {
                    Some(target) => Some(target),
                    None => matrix.make(row.fresh).await,
                };
                let n = matrix.next();
                let mut vars: HashMap<&str, String> = HashMap::from([
                    ("W", matrix.workspace.clone()),
                    ("memory", memory.clone()),
                    ("job", job.clone()),
                    ("doc", doc.clone()),
                    ("fact", fact.clone()),
                    ("n", n.to_string()),
                ]);
                if let Some(target) = &target {
                    vars.insert("target", target.clone());
                }
                // A cookie caller names the workspace; a key acts in its own.
                let named = matches!(way, Way::Cookie(_)).then_some(matrix.workspace.as_str());
                let call = build(&row.method, row.path, &row.body, row.ws, named, &vars);
                let (status, text) = send(&matrix.app, way, &call).await;
                checked += 1;
                let who = format!(
                    "{} ({} {}) as {role} by {}",
                    row.name,
                    call.method,
                    call.path,
                    way.name()
                );
                let json: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                if row.cookie_only && matches!(way, Way::Key(_)) {
                    if status != 401 {
                        failures.push(format!("{who}: a key must get 401, got {status}: {text}"));
                    }
                } else if matrix_allows(role, row.need) {
                    if !row.ok.contains(&status) {
                        failures.push(format!(
                            "{who}: allowed ({:?}), expected one of {:?}, got {status}: {text}",
                            row.need, row.ok
                        ));
                    }
                } else {
                    let message = json["error"].as_str().unwrap_or_default();
                    if status != 403
                        || json["code"] != "HTTP_403"
                        || !message.contains(&format!("your role ({role})"))
                    {
                        failures.push(format!(
                            "{who}: refused ({:?}), expected 403 'your role ({role}) ...', got {status}: {text}",
                            row.need
                        ));
                    }
                }
                // A refusal consumed nothing: the target serves the next caller.
                if status == 403 {
                    if let Some(target) = target {
                        spare.insert(index, target);
                    }
                }
            }
        }
    }
    println!("role matrix: {checked} calls checked");
    assert!(
        failures.is_empty(),
        "{} of {checked} calls broke the role matrix:\n{}",
        failures.len(),
        failures.join("\n")
    );

    // The workspace came through as it was: its plan, and its four principals with their roles.
    let current = matrix
        .owner_json(
            Method::GET,
            &format!("/api/subscription/current?workspaceId={ws}"),
            Value::Null,
        )
        .await;
    assert_eq!(current["plan"], "free", "{current}");
    for (role, user, key) in &callers {
        let team = must(
            &matrix.app,
            Way::Cookie(user),
            Method::GET,
            &format!("/api/workspaces/{ws}/team"),
            Value::Null,
        )
        .await;
        assert_eq!(team["currentUserRole"], *role, "{team}");
        let listed = must(
            &matrix.app,
            Way::Key(key),
            Method::GET,
            "/api/workspaces",
            Value::Null,
        )
        .await;
        assert_eq!(listed["workspaces"][0]["role"], *role, "{listed}");
    }
}

// ----- 2. another workspace's ids, guessed ---------------------------------------------------

/// Everything one user made in their workspace, and every id of it.
struct Seeded {
    user: TestUser,
    workspace: String,
    key: String,
    /// The words only this workspace's contents use.
    markers: Vec<String>,
    /// Ids by kind: `mem`, `job`, `doc`, `vmem` (facts and extracted memories), `member`,
    /// `inv`, `key`, `vault`, `checkout`, `chunk`, `user`, `ws`.
    ids: BTreeMap<&'static str, Vec<String>>,
    key_prefix: String,
}

impl Seeded {
    fn all_ids(&self) -> Vec<String> {
        self.ids.values().flatten().cloned().collect()
    }
}

async fn seed(app: &TestApp, email: &str, markers: [&str; 6]) -> Seeded {
    let user = app.sign_up(email).await;
    let ws = user.workspace_id.to_string();
    let me = Way::Cookie(&user);
    let mut ids: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let mut add = |kind: &'static str, id: &Value| {
        let id = id
            .as_str()
            .unwrap_or_else(|| panic!("{kind} id: {id}"))
            .to_string();
        ids.entry(kind).or_default().push(id);
    };
    add("ws", &Value::from(ws.clone()));
    add("user", &Value::from(user.user_id.to_string()));

    let created = must(
        app,
        me,
        Method::POST,
        &format!("/api/workspaces/{ws}/api-keys"),
        json!({"name": "integration"}),
    )
    .await;
    let key = created["key"].as_str().unwrap().to_string();
    let key_prefix = created["apiKey"]["prefix"].as_str().unwrap().to_string();
    add("key", &created["apiKey"]["id"]);
    let by_key = Way::Key(&key);

    // Memories, one of them with a second version.
    let contents = [
        format!("The spare server key is kept in drawer {}", markers[0]),
        format!("Deploy approvals go through the {} channel", markers[1]),
        format!("The backup generator code word is {}", markers[2]),
    ];
    let mut first = String::new();
    for content in &contents {
        let saved = must(
            app,
            by_key,
            Method::POST,
            "/api/memories",
            json!({"content": content, "infer": false}),
        )
        .await;
        add("mem", &saved["memory"]["id"]);
        if first.is_empty() {
            first = saved["memory"]["id"].as_str().unwrap().to_string();
        }
    }
    let updated = must(
        app,
        by_key,
        Method::PATCH,
        &format!("/api/memories/{first}"),
        json!({"content": format!("The spare server key moved to cabinet {}", markers[0])}),
    )
    .await;
    add("mem", &updated["id"]);

    // A long note: a job and the memories it made.
    let accepted = must(
        app,
        by_key,
        Method::POST,
        "/api/memories",
        json!({"content": long_note(markers[3], markers[3])}),
    )
    .await;
    let job_id = accepted["jobId"].as_str().expect("a job").to_string();
    add("job", &accepted["jobId"]);
    let job = settle_job(app, &key, &job_id).await;
    assert_eq!(job["state"], "completed", "{job}");
    for part in job["memories"].as_array().unwrap() {
        if part["memory"]["id"].is_string() {
            add("mem", &part["memory"]["id"]);
        }
    }

    // A document, its extracted memories and its chunks.
    let text = format!(
        "{m} handbook. The {m} warehouse in Tromsø stores 4,200 spare parts. \
         The warehouse manager approves every {m} shipment before noon. \
         Shipments of the {m} depot leave on Tuesdays and Fridays.",
        m = markers[4]
    );
    let accepted = must(
        app,
        by_key,
        Method::POST,
        "/api/context-vault/documents",
        json!({"title": format!("{} handbook", markers[4]), "sourceType": "text", "content": text}),
    )
    .await;
    let doc = accepted["document"]["id"].as_str().unwrap().to_string();
    add("doc", &accepted["document"]["id"]);
    let detail = settle_document(app, &key, &doc).await;
    assert_eq!(detail["document"]["status"], "completed", "{detail}");
    let extracted = must(
        app,
        by_key,
        Method::GET,
        &format!("/api/context-vault/documents/{doc}/memories"),
        Value::Null,
    )
    .await;
    for memory in extracted["memories"].as_array().unwrap() {
        add("vmem", &memory["id"]);
    }
    let found = must(
        app,
        by_key,
        Method::GET,
        &format!("/api/context-vault/search?q={}&mode=documents", markers[4]),
        Value::Null,
    )
    .await;
    for chunk in found["chunks"].as_array().unwrap() {
        add("chunk", &chunk["id"]);
    }

    // A company fact, a named vault and the default one.
    let fact = must(
        app,
        by_key,
        Method::POST,
        "/api/context-vault/memories",
        json!({"content": format!("The {} office has fourteen meeting rooms.", markers[5])}),
    )
    .await;
    add("vmem", &fact["memory"]["id"]);
    must(
        app,
        by_key,
        Method::POST,
        "/api/context-vault/vaults",
        json!({"name": "private"}),
    )
    .await;
    let vaults = must(
        app,
        by_key,
        Method::GET,
        "/api/context-vault/vaults",
        Value::Null,
    )
    .await;
    for vault in vaults["vaults"].as_array().unwrap() {
        add("vault", &vault["id"]);
    }

    // An invitation, a second member, and a checkout left open.
    let local = email.split('@').next().unwrap();
    let invited = must(
        app,
        me,
        Method::POST,
        &format!("/api/workspaces/{ws}/invitations"),
        json!({"email": format!("guest-of-{local}@example.com"), "role": "viewer"}),
    )
    .await;
    add("inv", &invited["invitation"]["id"]);
    let helper = app.sign_up(&format!("helper-of-{local}@example.com")).await;
    app.add_member(&user, user.workspace_id, &helper, "member")
        .await;
    add("user", &Value::from(helper.user_id.to_string()));
    let team = must(
        app,
        me,
        Method::GET,
        &format!("/api/workspaces/{ws}/team"),
        Value::Null,
    )
    .await;
    for member in team["members"].as_array().unwrap() {
        add("member", &member["id"]);
    }
    let checkout = must(
        app,
        me,
        Method::POST,
        "/api/subscription/checkout",
        json!({"workspaceId": ws, "plan": "pro"}),
    )
    .await;
    add("checkout", &checkout["sessionId"]);

    Seeded {
        user,
        workspace: ws,
        key,
        markers: markers.iter().map(|m| m.to_lowercase()).collect(),
        ids,
        key_prefix,
    }
}

/// A request a stranger may try: `{ws}` is a workspace in the path, `{mem}`, `{job}`, `{doc}`,
/// `{vmem}`, `{member}`, `{inv}`, `{key}`, `{vault}`, `{checkout}` ids, `{q}` a search text,
/// `{n}` a counter.
struct Probe {
    method: Method,
    path: &'static str,
    body: Body,
    ws: WsIn,
}

fn probe(method: Method, path: &'static str, ws: WsIn) -> Probe {
    Probe {
        method,
        path,
        body: Body::Empty,
        ws,
    }
}

impl Probe {
    fn json(mut self, body: Value) -> Self {
        self.body = Body::Json(body);
        self
    }
}

fn probes() -> Vec<Probe> {
    use Method as M;
    use WsIn::{Body as B, Path as P, Query as Q};
    vec![
        probe(M::POST, "/api/memories", B)
            .json(json!({"content": "Stranger note {n}", "infer": false, "supersedes": "{mem}"})),
        probe(M::GET, "/api/memories?search={q}", Q),
        probe(M::GET, "/api/memories/search?q={q}", Q),
        probe(M::GET, "/api/memories/profile", Q),
        probe(M::GET, "/api/memories/graph", Q),
        probe(M::GET, "/api/memories/jobs/{job}", Q),
        probe(M::GET, "/api/memories/{mem}", Q),
        probe(M::GET, "/api/memories/{mem}/history", Q),
        probe(M::PATCH, "/api/memories/{mem}", Q)
            .json(json!({"content": "Overwritten by a stranger {n}"})),
        probe(M::PATCH, "/api/memories/{mem}", Q)
            .json(json!({"validUntil": "2001-01-01T00:00:00Z"})),
        probe(M::DELETE, "/api/memories/{mem}", Q),
        probe(M::POST, "/api/memories/{mem}/forget", Q).json(json!({"reason": "stranger"})),
        probe(M::POST, "/api/memories/{mem}/feedback", Q).json(json!({"rating": "wrong"})),
        probe(M::GET, "/api/context-vault/vaults", Q),
        probe(M::POST, "/api/context-vault/vaults", B).json(json!({"name": "stranger {n}"})),
        probe(M::GET, "/api/context-vault/documents", Q),
        probe(M::GET, "/api/context-vault/documents?vaultId={vault}", Q),
        probe(M::POST, "/api/context-vault/documents", B).json(json!({
            "vaultId": "{vault}",
            "title": "Stranger document {n}",
            "sourceType": "text",
            "content": "Stranger document {n}: the bike shed is painted green."
        })),
        Probe {
            method: M::POST,
            path: "/api/context-vault/documents/upload",
            body: Body::Upload,
            ws: WsIn::Form,
        },
        probe(M::GET, "/api/context-vault/documents/{doc}", Q),
        probe(M::GET, "/api/context-vault/documents/{doc}/memories", Q),
        probe(M::DELETE, "/api/context-vault/documents/{doc}", Q),
        probe(M::POST, "/api/context-vault/documents/{doc}/cancel", Q),
        probe(M::POST, "/api/context-vault/documents/{doc}/retry", Q),
        probe(M::GET, "/api/context-vault/search?q={q}", Q),
        probe(M::GET, "/api/context-vault/search?q={q}&vaultId={vault}", Q),
        probe(M::GET, "/api/context-vault/search?q={q}&mode=documents", Q),
        probe(M::GET, "/api/context-vault/memories", Q),
        probe(M::GET, "/api/context-vault/memories?vaultId={vault}", Q),
        probe(M::POST, "/api/context-vault/memories", B).json(
            json!({"content": "Stranger fact {n} about the bike shed.", "vaultId": "{vault}"}),
        ),
        probe(M::POST, "/api/context-vault/memories/{vmem}/feedback", B)
            .json(json!({"rating": "wrong"})),
        probe(M::GET, "/api/workspaces", P),
        probe(M::GET, "/api/workspaces/{ws}/team", P),
        probe(M::PATCH, "/api/workspaces/{ws}/members/{member}", P).json(json!({"role": "viewer"})),
        probe(M::DELETE, "/api/workspaces/{ws}/members/{member}", P),
        probe(M::POST, "/api/workspaces/{ws}/invitations", P)
            .json(json!({"email": "stranger-{n}@example.com", "role": "admin"})),
        probe(M::DELETE, "/api/workspaces/{ws}/invitations/{inv}", P),
        probe(M::POST, "/api/invitations/{inv}/accept", P),
        probe(M::GET, "/api/workspaces/{ws}/api-keys", P),
        probe(M::POST, "/api/workspaces/{ws}/api-keys", P).json(json!({"name": "stranger {n}"})),
        probe(M::DELETE, "/api/workspaces/{ws}/api-keys/{key}", P),
        probe(M::GET, "/api/subscription/current", Q),
        probe(M::POST, "/api/subscription/checkout", B).json(json!({"plan": "ultimate"})),
        probe(M::POST, "/api/subscription/portal", B).json(json!({})),
        probe(M::POST, "/api/subscription/change-plan", B).json(json!({"plan": "ultimate"})),
        probe(M::GET, "/billing/portal/{ws}", P),
        Probe {
            method: M::POST,
            path: "/billing/portal/{ws}/plan",
            body: Body::Form("plan=ultimate"),
            ws: P,
        },
        probe(M::GET, "/billing/checkout/{checkout}", P),
        probe(M::POST, "/billing/checkout/{checkout}/confirm", P),
    ]
}

/// `text` with every hyphenated UUID replaced by `<id>`.
fn without_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if rest.len() >= 36
            && rest.is_char_boundary(36)
            && rest.as_bytes()[8] == b'-'
            && Uuid::try_parse(&rest[..36]).is_ok()
        {
            out.push_str("<id>");
            rest = &rest[36..];
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The `error` of an error envelope, ids blanked.
fn error_of(text: &str) -> String {
    let json: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    without_ids(json["error"].as_str().unwrap_or(text))
}

/// What a workspace looks like to its owner: compared before and after the stranger's run.
async fn snapshot(app: &TestApp, seeded: &Seeded) -> Value {
    let me = Way::Cookie(&seeded.user);
    let ws = &seeded.workspace;
    let mut memories = Vec::new();
    for id in &seeded.ids["mem"] {
        memories.push(
            must(
                app,
                me,
                Method::GET,
                &format!("/api/memories/{id}?workspaceId={ws}"),
                Value::Null,
            )
            .await,
        );
    }
    let list = must(
        app,
        me,
        Method::GET,
        &format!("/api/memories?workspaceId={ws}&limit=100"),
        Value::Null,
    )
    .await;
    let doc = &seeded.ids["doc"][0];
    let document = must(
        app,
        me,
        Method::GET,
        &format!("/api/context-vault/documents/{doc}?workspaceId={ws}"),
        Value::Null,
    )
    .await;
    let extracted = must(
        app,
        me,
        Method::GET,
        &format!("/api/context-vault/documents/{doc}/memories?workspaceId={ws}"),
        Value::Null,
    )
    .await;
    let browse = must(
        app,
        me,
        Method::GET,
        &format!("/api/context-vault/memories?workspaceId={ws}&limit=100"),
        Value::Null,
    )
    .await;
    let vaults = must(
        app,
        me,
        Method::GET,
        &format!("/api/context-vault/vaults?workspaceId={ws}"),
        Value::Null,
    )
    .await;
    let team = must(
        app,
        me,
        Method::GET,
        &format!("/api/workspaces/{ws}/team"),
        Value::Null,
    )
    .await;
    let mut keys = must(
        app,
        me,
        Method::GET,
        &format!("/api/workspaces/{ws}/api-keys"),
        Value::Null,
    )
    .await;
    for key in keys["apiKeys"].as_array_mut().unwrap() {
        key["lastUsedAt"] = Value::Null;
    }
    let mut subscription = must(
        app,
        me,
        Method::GET,
        &format!("/api/subscription/current?workspaceId={ws}"),
        Value::Null,
    )
    .await;
    subscription["memoryCount"] = Value::Null;
    let job = &seeded.ids["job"][0];
    let job = must(
        app,
        me,
        Method::GET,
        &format!("/api/memories/jobs/{job}?workspaceId={ws}"),
        Value::Null,
    )
    .await;
    json!({
        "memories": memories,
        "list": list,
        "document": document["document"],
        "extracted": extracted,
        "browse": browse,
        "vaults": vaults,
        "team": team,
        "keys": keys,
        "subscription": subscription,
        "job": job,
    })
}

#[tokio::test]
async fn another_workspace_is_unreachable_by_guessing_ids() {
    let seed_value: u64 = std::env::var("MEMVAULT_ROLES_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    println!("seed {seed_value} (replay with MEMVAULT_ROLES_SEED={seed_value})");
    let mut rng = StdRng::seed_from_u64(seed_value);

    let app = spawn().await;
    let a = seed(
        &app,
        "alice@example.com",
        [
            "AQUILA-9301",
            "BOREAS-4412",
            "CYGNUS-7723",
            "DRACO",
            "ERIDANUS",
            "FORNAX",
        ],
    )
    .await;
    let b = seed(
        &app,
        "bob@example.com",
        [
            "LYRA-1203",
            "MENSA-5540",
            "NORMA-8861",
            "PAVO",
            "PICTOR",
            "SCULPTOR",
        ],
    )
    .await;
    let before = snapshot(&app, &a).await;

    // What must never reach the stranger: A's ids, contents, emails and key prefix.
    let a_ids = a.all_ids();
    let b_ids: HashSet<String> = b.all_ids().into_iter().collect();
    assert!(a_ids.iter().all(|id| !b_ids.contains(id)));
    let mut needles: Vec<String> = a_ids.clone();
    needles.extend(a.markers.iter().cloned());
    needles.extend([
        "alice@example.com".to_string(),
        "guest-of-alice".to_string(),
        "helper-of-alice".to_string(),
        a.key_prefix.to_lowercase(),
    ]);
    let needles: Vec<String> = needles.into_iter().map(|n| n.to_lowercase()).collect();
    // Control: the same needles are found in A's own answers (the check below can see).
    let own = serde_json::to_string(&before).unwrap().to_lowercase();
    for needle in a.ids["mem"].iter().chain(&a.ids["vmem"]).chain(&a.markers) {
        assert!(own.contains(&needle.to_lowercase()), "control: {needle}");
    }
    let queries: Vec<String> = a
        .markers
        .iter()
        .cloned()
        .chain(["server key".to_string(), "warehouse".to_string()])
        .collect();

    let probes = probes();
    let rounds = 8;
    let mut deck: Vec<usize> = (0..probes.len())
        .flat_map(|i| std::iter::repeat_n(i, rounds))
        .collect();
    deck.shuffle(&mut rng);

    let mut failures = Vec::new();
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    for (step, &index) in deck.iter().enumerate() {
        let probe = &probes[index];
        let way = if rng.random_bool(0.5) {
            Way::Cookie(&b.user)
        } else {
            Way::Key(&b.key)
        };
        // A's ids in every slot (now and then one of another kind), A's workspace in the
        // path mostly, and workspaceId naming A, B or nobody.
        let mut vars: HashMap<&str, String> = HashMap::new();
        for kind in [
            "mem", "job", "doc", "vmem", "member", "inv", "key", "vault", "checkout",
        ] {
            let pool = if rng.random_bool(0.85) {
                &a.ids[kind]
            } else {
                &a_ids
            };
            vars.insert(kind, pool.choose(&mut rng).unwrap().clone());
        }
        let path_ws = if rng.random_bool(0.7) { &a } else { &b };
        vars.insert("ws", path_ws.workspace.clone());
        vars.insert("q", queries.choose(&mut rng).unwrap().replace(' ', "%20"));
        vars.insert("n", step.to_string());
        let named = match rng.random_range(0..3) {
            0 => Some(a.workspace.as_str()),
            1 => Some(b.workspace.as_str()),
            _ => None,
        };
        if matches!(probe.body, Body::Upload) && rng.random_bool(0.5) {
            vars.remove("vault");
        }
        let call = build(
            &probe.method,
            probe.path,
            &probe.body,
            probe.ws,
            named,
            &vars,
        );
        let (status, text) = send(&app, way, &call).await;
        *statuses.entry(status).or_default() += 1;
        let asked = call.text().to_lowercase();
        let who = format!(
            "step {step}: {} {} by {}",
            call.method,
            call.path,
            way.name()
        );
        let a_in_request: Vec<&String> = a_ids.iter().filter(|id| asked.contains(*id)).collect();

        if ![200, 201, 202, 400, 401, 403, 404, 410].contains(&status) {
            failures.push(format!("{who}: unexpected {status}: {text}"));
        }
        if !a_in_request.is_empty() && status < 400 {
            failures.push(format!(
                "{who}: acted on A's ids ({a_in_request:?}) with {status}: {text}"
            ));
        }
        // No A id or content in the answer, except an id the request itself sent, echoed in
        // an error.
        let answer = text.to_lowercase();
        for needle in &needles {
            if answer.contains(needle.as_str())
                && !(status >= 400 && asked.contains(needle.as_str()))
            {
                failures.push(format!("{who}: {status} leaks '{needle}': {text}"));
            }
        }
        // An id of A's answers as an id that was never made: no existence oracle.
        if !a_in_request.is_empty() {
            let swaps: Vec<(String, String)> = a_in_request
                .iter()
                .map(|id| ((*id).clone(), Uuid::new_v4().to_string()))
                .collect();
            let twin = call.replaced(&swaps);
            let (twin_status, twin_text) = send(&app, way, &twin).await;
            if twin_status != status || (status >= 400 && error_of(&text) != error_of(&twin_text)) {
                failures.push(format!(
                    "{who}: A's ids answer {status} {text}, unknown ids answer {twin_status} {twin_text}"
                ));
            }
        }
    }
    println!("stranger: {} calls, statuses {statuses:?}", deck.len());
    assert!(
        failures.is_empty(),
        "seed {seed_value}: {} of {} calls leaked or reached A:\n{}",
        failures.len(),
        deck.len(),
        failures.join("\n")
    );

    // A's workspace is as it was, and still works: memories, document, facts, vaults, team,
    // invitations, keys, plan.
    let after = snapshot(&app, &a).await;
    assert_eq!(before, after, "seed {seed_value}: A's workspace changed");
    let list = must(
        &app,
        Way::Key(&a.key),
        Method::GET,
        "/api/memories",
        Value::Null,
    )
    .await;
    assert!(list["total"].as_i64().unwrap() >= 3, "{list}");
    for (i, marker) in a.markers.iter().take(3).enumerate() {
        let found = must(
            &app,
            Way::Key(&a.key),
            Method::GET,
            &format!("/api/memories/search?q={marker}"),
            Value::Null,
        )
        .await;
        assert!(
            found.to_string().to_lowercase().contains(marker.as_str()),
            "A's memory {i} ({marker}) no longer found: {found}"
        );
    }
    let fact = must(
        &app,
        Way::Key(&a.key),
        Method::GET,
        &format!("/api/context-vault/search?q={}&mode=memories", a.markers[5]),
        Value::Null,
    )
    .await;
    assert!(
        fact.to_string().to_lowercase().contains(&a.markers[5]),
        "A's fact no longer found: {fact}"
    );
    let team = &after["team"];
    assert_eq!(team["members"].as_array().unwrap().len(), 2, "{team}");
    assert_eq!(
        team["invitations"][0]["id"].as_str(),
        Some(a.ids["inv"][0].as_str()),
        "{team}"
    );
    assert_eq!(after["subscription"]["plan"], "free", "{after}");
    let checkout = &a.ids["checkout"][0];
    let call = Call {
        method: Method::GET,
        path: format!("/billing/checkout/{checkout}"),
        payload: Payload::Empty,
    };
    let (status, page) = send(&app, Way::Cookie(&a.user), &call).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("Confirm"),
        "A's checkout was completed: {page}"
    );
    let (status, _) = json_of(
        app.with_key(&a.key, Method::GET, "/api/workspaces")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "A's key still works");
}
