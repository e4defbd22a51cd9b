//! `spawn_app()`: a server on port 0 with a fresh database, a workspace and its key.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use memvault::config::{AbuseLimits, LogFormat, ServiceUrl, Settings, Switch, WorkerSettings};
use memvault::embedding::{EmbedError, Embedder, LocalEmbedder};
use memvault::http::AppState;
use memvault::model::Plan;
use memvault::services::AccountsService;
use memvault::startup::{Application, Overrides};
use memvault::storage::Store;
use memvault_actors::Workspaces;
use reqwest::{Method, RequestBuilder, Response};
use serde_json::Value;
use sqlx::Connection;
use tokio::sync::{oneshot, OnceCell};
use uuid::Uuid;

pub const TEST_DB_ENV: &str = "MEMVAULT_TEST_DATABASE_URL";

/// The PostgreSQL server URL under test, if any.
pub fn postgres_url() -> Option<String> {
    std::env::var(TEST_DB_ENV)
        .ok()
        .filter(|url| url.starts_with("postgres"))
}

/// A fresh database: a SQLite file in a temp dir, or a new PostgreSQL database.
pub struct TestDb {
    pub url: String,
    _dir: Option<tempfile::TempDir>,
    /// The server's own files: its document workers' directories.
    pub work: Arc<tempfile::TempDir>,
}

static PG_CLEANED: OnceCell<()> = OnceCell::const_new();

pub async fn fresh_database() -> TestDb {
    match postgres_url() {
        Some(server) => {
            let mut admin = sqlx::PgConnection::connect(&server)
                .await
                .expect("connect to the test PostgreSQL server");
            // Databases left by earlier runs are dropped once per run.
            PG_CLEANED
                .get_or_init(|| async {
                    let mut admin = sqlx::PgConnection::connect(&server).await.expect("connect");
                    let old: Vec<String> = sqlx::query_scalar(
                        "SELECT datname FROM pg_database WHERE datname LIKE 'memvault_test_%'",
                    )
                    .fetch_all(&mut admin)
                    .await
                    .expect("list old test databases");
                    for name in old {
                        let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                            "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                        )))
                        .execute(&mut admin)
                        .await;
                    }
                })
                .await;
            let name = format!("memvault_test_{}", Uuid::new_v4().simple());
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
                .execute(&mut admin)
                .await
                .expect("create the test database");
            let mut url = url::Url::parse(&server).expect("a valid PostgreSQL URL");
            url.set_path(&name);
            TestDb {
                url: url.to_string(),
                _dir: None,
                work: Arc::new(tempfile::tempdir().expect("temp dir")),
            }
        }
        None => {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = format!("sqlite://{}", dir.path().join("memvault.db").display());
            TestDb {
                url,
                _dir: Some(dir),
                work: Arc::new(tempfile::tempdir().expect("temp dir")),
            }
        }
    }
}

/// The embedding model, loaded once for every server of the test run (the real model: the
/// tests check retrieval by meaning).
pub fn shared_embedder(settings: &Settings) -> Arc<dyn Embedder> {
    static MODEL: std::sync::OnceLock<Arc<LocalEmbedder>> = std::sync::OnceLock::new();
    MODEL
        .get_or_init(|| {
            Arc::new(
                LocalEmbedder::load(&settings.embedding.model_dir, settings.embedding.precision)
                    .expect("the embedding model (run scripts/install-model.sh)"),
            )
        })
        .clone()
}

/// The shared model behind a switch: once a test turns it off, every call fails as an
/// unreachable embedding server would.
struct Switchable {
    model: Arc<dyn Embedder>,
    off: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl Embedder for Switchable {
    fn model(&self) -> &str {
        self.model.model()
    }

    fn dimensions(&self) -> usize {
        self.model.dimensions()
    }

    async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        if self.off.load(Ordering::SeqCst) {
            return Err(EmbedError::Remote("switched off by the test".to_string()));
        }
        self.model.embed(texts).await
    }
}

pub fn test_settings(db: &TestDb) -> Settings {
    let level = std::env::var("TEST_LOG").unwrap_or_else(|_| "off".to_string());
    memvault::telemetry::init(LogFormat::Text, &level);
    let mut settings = Settings::default();
    settings.server.listen = "127.0.0.1:0".parse().unwrap();
    settings.server.log_level = level;
    settings.storage.database_url = Some(ServiceUrl::new(db.url.clone()));
    settings.storage.max_connections = 5;
    settings.accounts.rate_limits = Switch::On;
    // Tests fetch URL documents from servers on loopback.
    settings.vault.fetch_allow_private = true;
    settings.vault.ingest_backoff_ms = 20;
    settings.vault.ingest_backoff_cap_ms = 200;
    // Many tests sign up and sign in many users from 127.0.0.1; the abuse tests
    // (tests/api/edges.rs) set the limits they prove.
    settings.accounts.abuse = AbuseLimits {
        sign_up_per_address_per_hour: 10_000,
        sign_up_per_email_per_hour: 10_000,
        sign_in_per_address_per_minute: 10_000,
        sign_in_per_email_per_hour: 10_000,
        workspaces_per_user_per_day: 10_000,
        oauth_registrations_per_address_per_hour: 10_000,
        invitations_per_workspace_per_day: 10_000,
        password_hash_wait_ms: 60_000,
        ..AbuseLimits::default()
    };
    settings.vault.worker = WorkerSettings {
        // The test binary is not memvault: workers are the memvault binary Cargo built.
        program: Some(PathBuf::from(env!("CARGO_BIN_EXE_memvault"))),
        dir: Some(db.work.path().join("workers")),
        // The hostile-input and chaos tests make workers misbehave on purpose.
        test_faults: true,
        ..WorkerSettings::default()
    };
    settings
}

pub struct TestApp {
    /// The vault service of the running server (tests reach the ingestion supervisor).
    pub vault: Arc<memvault::services::vault::VaultService>,
    /// The server's supervised actors (readiness tests stop one).
    pub liveness: memvault::services::liveness::Liveness,
    pub address: String,
    pub client: reqwest::Client,
    pub workspace_id: Uuid,
    pub api_key: String,
    pub store: Arc<dyn Store>,
    pub workspaces: Workspaces,
    pub db: TestDb,
    pub settings: Settings,
    embedder_off: Arc<AtomicBool>,
    stop: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

/// A route that panics, to prove the server survives it.
async fn panics() -> &'static str {
    panic!("deliberate test panic")
}

/// A slow route, to prove shutdown waits for requests in flight.
async fn slow() -> &'static str {
    tokio::time::sleep(Duration::from_millis(400)).await;
    "finished"
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

pub async fn spawn_app_with(configure: impl FnOnce(&mut Settings)) -> TestApp {
    let db = fresh_database().await;
    let mut settings = test_settings(&db);
    configure(&mut settings);
    spawn_on(db, settings).await
}

pub async fn spawn_on(db: TestDb, settings: Settings) -> TestApp {
    spawn_with_faults(db, settings, None).await
}

/// A server whose ingestion pipeline injects `faults`.
pub async fn spawn_with_faults(
    db: TestDb,
    settings: Settings,
    faults: Option<Arc<dyn memvault_pipelines::pipeline::Faults>>,
) -> TestApp {
    let mut app = start_server(db, settings, faults).await;
    let accounts = AccountsService::new(
        app.store.clone(),
        Some(app.workspaces.clone()),
        Default::default(),
    );
    let (workspace, api_key) = accounts
        .create_workspace("Test Workspace", None)
        .await
        .expect("workspace");
    app.workspace_id = workspace.id;
    app.api_key = api_key;
    app
}

/// A server on `db`, without a workspace of its own yet.
async fn start_server(
    db: TestDb,
    settings: Settings,
    faults: Option<Arc<dyn memvault_pipelines::pipeline::Faults>>,
) -> TestApp {
    let extra: Router<AppState> = Router::new()
        .route("/test/panic", get(panics))
        .route("/test/slow", get(slow));
    let embedder_off = Arc::new(AtomicBool::new(false));
    let app = Application::build_with(
        &settings,
        Overrides {
            routes: Some(extra),
            embedder: Some(Arc::new(Switchable {
                model: shared_embedder(&settings),
                off: embedder_off.clone(),
            })),
            skip_index_rebuild: false,
            skip_resume: false,
            pipeline_faults: faults,
            decoder: None,
        },
    )
    .await
    .expect("build the app");
    let address = format!("http://{}", app.local_addr());
    let store = app.store();
    let workspaces = app.workspaces().clone();
    let vault = app.vault().clone();
    let liveness = app.liveness().clone();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async {
        let _ = stopped.await;
    }));
    TestApp {
        vault,
        liveness,
        address,
        client: reqwest::Client::new(),
        workspace_id: Uuid::nil(),
        api_key: String::new(),
        store,
        workspaces,
        db,
        settings,
        embedder_off,
        stop: Some(stop),
        server: Some(server),
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    /// A request with this app's key.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(path))
            .header("X-API-Key", &self.api_key)
    }

    /// Another workspace with its own key.
    pub async fn other_workspace(&self, plan: Option<Plan>) -> (Uuid, String) {
        let accounts = AccountsService::new(
            self.store.clone(),
            Some(self.workspaces.clone()),
            Default::default(),
        );
        let (workspace, key) = accounts
            .create_workspace("Other Workspace", plan)
            .await
            .expect("workspace");
        (workspace.id, key)
    }

    pub async fn set_plan(&self, plan: Plan) {
        AccountsService::new(
            self.store.clone(),
            Some(self.workspaces.clone()),
            Default::default(),
        )
        .set_plan(self.workspace_id, plan)
        .await
        .expect("set plan");
    }

    /// Sends a request with this app's key.
    pub async fn send(&self, method: Method, path: &str) -> Response {
        self.request(method, path).send().await.unwrap()
    }

    /// Sends a JSON body with this app's key.
    pub async fn send_json(
        &self,
        method: Method,
        path: &str,
        body: &impl serde::Serialize,
    ) -> Response {
        self.request(method, path).json(body).send().await.unwrap()
    }

    /// Saves `content` (with extra fields merged in) and returns the memory JSON.
    pub async fn save(&self, content: &str, extra: Value) -> Value {
        let mut body = serde_json::json!({ "content": content });
        merge(&mut body, extra);
        let response = self
            .request(Method::POST, "/api/memories")
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let json: Value = response.json().await.unwrap();
        assert_eq!(status, 201, "save failed: {json}");
        json["memory"].clone()
    }

    /// Spends the workspace's write window on cheap writes (deletes of documents that do not
    /// exist) until one is refused with 429.
    pub async fn spend_write_window(&self) {
        for _ in 0..1_000 {
            let response = self
                .request(
                    Method::DELETE,
                    &format!("/api/context-vault/documents/{}", Uuid::new_v4()),
                )
                .send()
                .await
                .unwrap();
            if response.status() == 429 {
                return;
            }
        }
        panic!("the write window never filled");
    }

    /// From now on every embedding this server asks for fails (as a down embedding server).
    pub fn embedder_fails(&self) {
        self.embedder_off.store(true, Ordering::SeqCst);
    }

    pub async fn get(&self, path: &str) -> Response {
        self.request(Method::GET, path).send().await.unwrap()
    }

    pub async fn get_json(&self, path: &str) -> (u16, Value) {
        json_of(self.request(Method::GET, path).send().await.unwrap()).await
    }

    /// Waits for the server to end on its own (its supervision tree gave up) and returns
    /// what `run_until` returned.
    pub async fn ended(&mut self, within: Duration) -> anyhow::Result<()> {
        let server = self.server.take().expect("the server is running");
        tokio::time::timeout(within, server)
            .await
            .expect("the server ends in time")
            .expect("server task")
    }

    /// Stops the server gracefully and waits for it.
    pub async fn stop(mut self) {
        self.shut_down().await;
    }

    async fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            tokio::time::timeout(Duration::from_secs(10), server)
                .await
                .expect("server stops in time")
                .expect("server task")
                .expect("server result");
        }
    }

    /// Stops the server and starts a new one on the same database, with the same workspace
    /// and key (everything in memory is rebuilt from the database).
    pub async fn restart(mut self) -> TestApp {
        self.shut_down().await;
        let work = self.db.work.clone();
        let db = std::mem::replace(
            &mut self.db,
            TestDb {
                url: String::new(),
                _dir: None,
                work,
            },
        );
        let mut app = start_server(db, self.settings.clone(), None).await;
        app.workspace_id = self.workspace_id;
        app.api_key = self.api_key.clone();
        app
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// `path` with `scope` in its query string; the unscoped lane (`""`) is the parameter left out
/// (an empty query parameter is refused).
pub fn with_scope(path: &str, scope: &str) -> String {
    if scope.is_empty() {
        path.to_string()
    } else {
        let separator = if path.contains('?') { '&' } else { '?' };
        format!("{path}{separator}scope={scope}")
    }
}

pub fn merge(target: &mut Value, extra: Value) {
    if let (Some(target), Value::Object(extra)) = (target.as_object_mut(), extra) {
        target.extend(extra);
    }
}

pub async fn json_of(response: Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let json =
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"));
    (status, json)
}

/// Asserts the error envelope: status, `code`, a `requestId` equal to the header, and an
/// `error` message containing `needle`.
pub async fn assert_error(response: Response, status: u16, needle: &str) -> Value {
    let header = response
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .expect("X-Request-Id on an error");
    let (got, body) = json_of(response).await;
    assert_eq!(got, status, "unexpected status, body: {body}");
    let code = if status == 500 {
        "INTERNAL_ERROR".to_string()
    } else {
        format!("HTTP_{status}")
    };
    assert_eq!(body["code"], code, "body: {body}");
    assert_eq!(body["requestId"], header, "body: {body}");
    let message = body["error"].as_str().expect("error message");
    assert!(
        message.contains(needle),
        "error '{message}' should mention '{needle}'"
    );
    assert_eq!(
        body.get("errorId").is_some(),
        status >= 500,
        "errorId only on 5xx: {body}"
    );
    body
}

/// A signed-in user: their session cookie, and the workspace sign-up made for them.
#[derive(Debug, Clone)]
pub struct TestUser {
    pub email: String,
    pub user_id: Uuid,
    /// `memvault.session_token=...`, ready for a `Cookie` header.
    pub cookie: String,
    /// The workspace sign-up made (they own it).
    pub workspace_id: Uuid,
}

pub const TEST_PASSWORD: &str = "correct horse battery";

/// The `name=value` part of a `Set-Cookie` header.
pub fn session_cookie_of(response: &Response) -> String {
    let set = response
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a Set-Cookie header");
    set.split(';').next().unwrap().trim().to_string()
}

impl TestApp {
    /// Signs up `email` (with [`TEST_PASSWORD`]) and returns the signed-in user.
    pub async fn sign_up(&self, email: &str) -> TestUser {
        let response = self
            .client
            .post(self.url("/api/auth/sign-up"))
            .json(&serde_json::json!({
                "email": email,
                "password": TEST_PASSWORD,
                "name": email.split('@').next().unwrap(),
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201, "sign-up of {email}");
        let cookie = session_cookie_of(&response);
        let body: Value = response.json().await.unwrap();
        TestUser {
            email: email.to_string(),
            user_id: body["user"]["id"].as_str().unwrap().parse().unwrap(),
            cookie,
            workspace_id: body["workspaces"][0]["id"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap(),
        }
    }

    /// A request as a signed-in user: their cookie, and this server's `Origin` (as a browser
    /// on the dashboard sends).
    pub fn as_user(&self, user: &TestUser, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(path))
            .header("Cookie", &user.cookie)
            .header("Origin", &self.address)
    }

    /// A request with a given API key.
    pub fn with_key(&self, key: &str, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(path))
            .header("X-API-Key", key)
    }

    /// Makes `member` a member of `owner`'s workspace with `role` (invite, then accept).
    pub async fn add_member(
        &self,
        owner: &TestUser,
        workspace_id: Uuid,
        member: &TestUser,
        role: &str,
    ) -> Uuid {
        let (status, invited) = json_of(
            self.as_user(
                owner,
                Method::POST,
                &format!("/api/workspaces/{workspace_id}/invitations"),
            )
            .json(&serde_json::json!({"email": member.email, "role": role}))
            .send()
            .await
            .unwrap(),
        )
        .await;
        assert_eq!(status, 201, "invite: {invited}");
        let token = invited["token"].as_str().unwrap();
        let (status, accepted) = json_of(
            self.as_user(
                member,
                Method::POST,
                &format!("/api/invitations/{token}/accept"),
            )
            .send()
            .await
            .unwrap(),
        )
        .await;
        assert_eq!(status, 200, "accept: {accepted}");
        accepted["member"]["id"].as_str().unwrap().parse().unwrap()
    }

    /// Creates an API key in `workspace_id` as `user`, with `role` (or the user's own).
    pub async fn create_key(
        &self,
        user: &TestUser,
        workspace_id: Uuid,
        role: Option<&str>,
    ) -> String {
        let mut body = serde_json::json!({"name": "test key"});
        if let Some(role) = role {
            body["role"] = Value::from(role);
        }
        let (status, created) = json_of(
            self.as_user(
                user,
                Method::POST,
                &format!("/api/workspaces/{workspace_id}/api-keys"),
            )
            .json(&body)
            .send()
            .await
            .unwrap(),
        )
        .await;
        assert_eq!(status, 201, "create key: {created}");
        created["key"].as_str().unwrap().to_string()
    }
}
