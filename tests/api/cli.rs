//! The command line and the server process: first run, admin commands, JSON logs, SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use memvault::config::Switch;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{fresh_database, spawn_on, test_settings, TestDb};

pub(crate) fn memvault(db: &TestDb, data_dir: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_memvault"));
    command
        .env("DATABASE_URL", &db.url)
        .env("MEMVAULT_DATA_DIR", data_dir)
        .env_remove("MEMVAULT_DATABASE_URL")
        .env_remove("RUST_LOG");
    command
}

pub(crate) fn admin(db: &TestDb, dir: &std::path::Path, args: &[&str]) -> (bool, Value, String) {
    let output = memvault(db, dir)
        .arg("admin")
        .args(args)
        .output()
        .expect("run memvault admin");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let json = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (output.status.success(), json, stderr)
}

/// `admin export` of `workspace` into `output`; the records it wrote.
fn export(
    db: &TestDb,
    dir: &std::path::Path,
    workspace: &str,
    output: &std::path::Path,
) -> Vec<Value> {
    let (ok, _, stderr) = admin(
        db,
        dir,
        &[
            "export",
            "--workspace",
            workspace,
            "--output",
            output.to_str().unwrap(),
        ],
    );
    assert!(ok, "{stderr}");
    std::fs::read_to_string(output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn create_workspace_prints_a_key_that_works() {
    let db = fresh_database().await;
    let dir = tempfile::tempdir().unwrap();
    let (ok, created, stderr) = admin(
        &db,
        dir.path(),
        &["create-workspace", "--name", "Acme", "--plan", "pro"],
    );
    assert!(ok, "{stderr}");
    let key = created["apiKey"].as_str().expect("apiKey").to_string();
    let workspace_id = created["workspaceId"]
        .as_str()
        .expect("workspaceId")
        .to_string();
    assert!(key.starts_with("mc_") && key.len() >= 35);
    assert!(uuid::Uuid::parse_str(&workspace_id).is_ok());

    let mut settings = test_settings(&db);
    settings.accounts.plan_refresh_secs = 1;
    let app = spawn_on(db, settings).await;
    let save = |content: &str| {
        app.client
            .request(Method::POST, app.url("/api/memories"))
            .header("X-API-Key", &key)
            .json(&json!({"content": content}))
    };
    let response = save("hello from the CLI key").send().await.unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(response.headers()["x-ratelimit-limit"], "300");

    // set-plan from another process reaches the running server within its refresh period.
    let (ok, changed, stderr) = admin(
        &app.db,
        dir.path(),
        &["set-plan", "--workspace", &workspace_id, "--plan", "hobby"],
    );
    assert!(ok, "{stderr}");
    assert_eq!(changed["plan"], "hobby");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut n = 0;
    loop {
        n += 1;
        let response = save(&format!("after plan change {n}"))
            .send()
            .await
            .unwrap();
        if response.headers()["x-ratelimit-limit"] == "100" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the plan change never reached the server"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn admin_commands_refuse_bad_input_clearly() {
    let db = fresh_database().await;
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, stderr) = admin(
        &db,
        dir.path(),
        &["create-workspace", "--name", "X", "--plan", "gold"],
    );
    assert!(!ok);
    assert!(stderr.contains("unknown plan 'gold'"), "{stderr}");
    let (ok, _, stderr) = admin(
        &db,
        dir.path(),
        &[
            "set-plan",
            "--workspace",
            &uuid::Uuid::new_v4().to_string(),
            "--plan",
            "pro",
        ],
    );
    assert!(!ok);
    assert!(stderr.contains("not found"), "{stderr}");
    let (ok, _, stderr) = admin(&db, dir.path(), &["create-workspace", "--name", "   "]);
    assert!(!ok);
    assert!(stderr.contains("name"), "{stderr}");
}

/// Runs `memvault serve` and collects its stderr lines.
pub(crate) struct Server {
    pub(crate) child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Server {
    fn start(db: &TestDb, dir: &std::path::Path) -> Server {
        Server::start_with(db, dir, &[])
    }

    /// Starts `memvault serve` with extra environment variables.
    pub(crate) fn start_with(db: &TestDb, dir: &std::path::Path, env: &[(&str, &str)]) -> Server {
        let mut child = memvault(db, dir)
            .arg("serve")
            .envs(env.iter().copied())
            .env("MEMVAULT_LISTEN", "127.0.0.1:0")
            .env("MEMVAULT_LOG_FORMAT", "json")
            .env("MEMVAULT_RATE_LIMITS", "off")
            .env("MEMVAULT_BILLING_KEY", "sk_live_do_not_log_me")
            .env(
                "MEMVAULT_BILLING_WEBHOOK_SECRET",
                "whsec_ZG8gbm90IGxvZyBtZQ==",
            )
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("start memvault serve");
        let stderr = child.stderr.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        Server {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a log line containing `needle`.
    pub(crate) fn wait_for(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        if let Some(line) = self.seen.iter().find(|l| l.contains(needle)) {
            return line.clone();
        }
        while let Ok(line) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            self.seen.push(line.clone());
            if line.contains(needle) {
                return line;
            }
        }
        panic!(
            "no log line with '{needle}'; saw:\n{}",
            self.seen.join("\n")
        );
    }

    /// Every log line so far.
    pub(crate) fn lines_so_far(&mut self) -> &[String] {
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        &self.seen
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn serve_guides_a_newcomer_logs_json_and_stops_gracefully_on_sigterm() {
    let db = fresh_database().await;
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(&db, dir.path());
    let config = server.wait_for("effective configuration");
    // Secrets are masked in the logged configuration.
    for secret in ["sk_live_do_not_log_me", "ZG8gbm90IGxvZyBtZQ"] {
        assert!(!config.contains(secret), "{config}");
    }
    // Grouped by subject, masked by type.
    let logged: Value = serde_json::from_str(&config).expect("JSON log line");
    let shown: Value = serde_json::from_str(logged["config"].as_str().unwrap_or("{}"))
        .expect("the configuration as JSON");
    assert_eq!(shown["billing"]["key"], "***", "{config}");
    assert_eq!(shown["billing"]["webhook_secret"], "***", "{config}");
    let hint = server.wait_for("no workspace yet");
    assert!(hint.contains("memvault admin create-workspace"), "{hint}");
    let listening: Value =
        serde_json::from_str(&server.wait_for("memvault listening")).expect("JSON log line");
    let address = listening["address"]
        .as_str()
        .expect("address field")
        .to_string();

    let (ok, created, stderr) = admin(&db, dir.path(), &["create-workspace", "--name", "Newcomer"]);
    assert!(ok, "{stderr}");
    let client = reqwest::Client::new();
    let response = client
        .post(format!("http://{address}/api/memories"))
        .header("X-API-Key", created["apiKey"].as_str().unwrap())
        .header("x-request-id", "newcomer-request-1")
        .json(&json!({"content": "my first memory"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let listed: Value = client
        .get(format!("http://{address}/api/memories"))
        .header("X-API-Key", created["apiKey"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["memories"][0]["content"], "my first memory");

    // The request's span (with its id) is in the JSON log.
    let logged: Value =
        serde_json::from_str(&server.wait_for("newcomer-request-1")).expect("JSON log line");
    assert_eq!(
        logged["span"]["request_id"], "newcomer-request-1",
        "{logged}"
    );

    let pid = server.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    server.wait_for("in-flight requests finished");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            assert!(status.success(), "exit status {status}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not stop after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn config_file_and_env_are_layered() {
    let db = fresh_database().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("custom.toml");
    std::fs::write(
        &file,
        // A flat name of earlier versions and a grouped table, in one file.
        "listen = \"127.0.0.1:0\"\n[accounts]\nrate_limits = \"off\"\n[server]\nlog_level = \"info\"\n",
    )
    .unwrap();
    let mut child = memvault(&db, dir.path())
        .arg("serve")
        .env("MEMVAULT_CONFIG", &file)
        .env("MEMVAULT_LOG_FORMAT", "json")
        .env("MEMVAULT_WORKSPACE_IDLE_SECS", "42")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut config_line = None;
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        if line.contains("effective configuration") {
            config_line = Some(line);
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let line: Value = serde_json::from_str(&config_line.expect("config logged")).unwrap();
    let config: Value = serde_json::from_str(line["config"].as_str().unwrap()).unwrap();
    assert_eq!(config["accounts"]["rate_limits"], json!(Switch::Off));
    assert_eq!(config["accounts"]["workspace_idle_secs"], 42);
    assert_eq!(config["server"]["listen"], "127.0.0.1:0");
    assert_eq!(config["server"]["log_format"], "json");
}

#[tokio::test]
async fn the_logged_configuration_masks_the_database_password() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_memvault"))
        .arg("serve")
        .env(
            "MEMVAULT_DATABASE_URL",
            "postgres://memvault:hunter2@127.0.0.1:1/nowhere",
        )
        .env("MEMVAULT_DATA_DIR", dir.path())
        .env("MEMVAULT_LOG_FORMAT", "json")
        .env_remove("RUST_LOG")
        .output()
        .expect("run memvault serve");
    // Nothing listens on port 1: the server cannot start, after logging its configuration.
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let config = stderr
        .lines()
        .find(|l| l.contains("effective configuration"))
        .expect("config logged");
    assert!(config.contains("memvault:***@127.0.0.1:1"), "{config}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert!(stderr.contains("cannot open the database"), "{stderr}");
}

#[tokio::test]
async fn import_and_export_round_trip_with_history() {
    let db = fresh_database().await;
    let dir = tempfile::tempdir().unwrap();
    let (ok, created, stderr) = admin(&db, dir.path(), &["create-workspace", "--name", "Source"]);
    assert!(ok, "{stderr}");
    let source = created["workspaceId"].as_str().unwrap().to_string();
    let input = dir.path().join("in.jsonl");
    std::fs::write(
        &input,
        [
            r#"{"content": "I live in Lisbon.", "category": "fact"}"#,
            r#"{"content": "I live in Porto."}"#,
            r#"{"content": "Our team uses Kotlin for the app.", "scope": "work", "project": "mobile", "thread": "standup-12", "speaker": "Ana"}"#,
            r#"{"content": "i live in porto"}"#,
            r#"{"content": "Our team uses Kotlin for the app.", "scope": "work", "project": "mobile"}"#,
            r#"not json"#,
            r#"{"content": "", "category": "fact"}"#,
            r#"{"content": "Bad category", "category": "mood"}"#,
            "",
        ]
        .join("\n"),
    )
    .unwrap();
    let (ok, report, stderr) = admin(
        &db,
        dir.path(),
        &["import", "--workspace", &source, input.to_str().unwrap()],
    );
    assert!(ok, "{stderr}");
    assert_eq!(report["lines"], 8, "{report}");
    assert_eq!(report["created"], 2, "{report}");
    assert_eq!(report["superseded"], 1, "{report}");
    // Line 4 repeats line 2 (stored when it superseded line 1); line 5 repeats line 3, whose
    // memory is not yet committed when line 5 is saved.
    assert_eq!(report["duplicates"], 2, "{report}");
    assert_eq!(report["failed"], 3, "{report}");
    let reasons = report["errors"].to_string();
    assert!(
        reasons.contains("content") && reasons.contains("category"),
        "{reasons}"
    );

    let output = dir.path().join("out.jsonl");
    let exported = export(&db, dir.path(), &source, &output);
    assert_eq!(exported.len(), 3, "{exported:?}");
    let lisbon = exported
        .iter()
        .find(|m| m["content"] == "I live in Lisbon.")
        .unwrap();
    assert_eq!(lisbon["isCurrent"], false);
    let porto = exported
        .iter()
        .find(|m| m["content"] == "I live in Porto.")
        .unwrap();
    assert_eq!(porto["supersedesId"], lisbon["id"]);
    assert_eq!(porto["version"], 2);
    let kotlin = exported.iter().find(|m| m["scope"] == "work").unwrap();
    assert_eq!(kotlin["thread"], "standup-12");
    assert_eq!(kotlin["speaker"], "Ana");

    // Into another workspace: the chain survives.
    let (_, target, _) = admin(&db, dir.path(), &["create-workspace", "--name", "Target"]);
    let target_id = target["workspaceId"].as_str().unwrap().to_string();
    let (ok, report, stderr) = admin(
        &db,
        dir.path(),
        &[
            "import",
            "--workspace",
            &target_id,
            output.to_str().unwrap(),
        ],
    );
    assert!(ok, "{stderr}");
    assert_eq!(report["created"], 2, "{report}");
    assert_eq!(report["superseded"], 1, "{report}");
    let again = export(&db, dir.path(), &target_id, &output);
    let fields = |m: &Value| {
        (
            m["content"].clone(),
            m["version"].clone(),
            m["isCurrent"].clone(),
            m["scope"].clone(),
            m["project"].clone(),
            m["category"].clone(),
            m["createdAt"].clone(),
            m["thread"].clone(),
            m["speaker"].clone(),
        )
    };
    assert_eq!(
        again.iter().map(fields).collect::<Vec<_>>(),
        exported.iter().map(fields).collect::<Vec<_>>()
    );

    // Re-embedding rewrites every current memory's vector.
    let (ok, reembedded, stderr) = admin(&db, dir.path(), &["reembed"]);
    assert!(ok, "{stderr}");
    assert_eq!(reembedded["reembedded"], 4, "{reembedded}");
    // An unknown workspace is refused clearly.
    let (ok, _, stderr) = admin(
        &db,
        dir.path(),
        &[
            "import",
            "--workspace",
            &uuid::Uuid::new_v4().to_string(),
            input.to_str().unwrap(),
        ],
    );
    assert!(!ok);
    assert!(stderr.contains("workspace"), "{stderr}");
}

/// A line repeating a memory stored before the import is a duplicate of it, in its own lane
/// and project only; a line repeating an earlier line of its batch is a duplicate of that
/// line's memory; a line updating a fact stored before the import supersedes it.
#[tokio::test]
async fn import_finds_texts_stored_before_it_and_earlier_in_its_batch() {
    let db = fresh_database().await;
    let dir = tempfile::tempdir().unwrap();
    let (ok, created, stderr) = admin(&db, dir.path(), &["create-workspace", "--name", "Dups"]);
    assert!(ok, "{stderr}");
    let workspace = created["workspaceId"].as_str().unwrap().to_string();
    let import = |name: &str, lines: &[&str]| {
        let input = dir.path().join(name);
        std::fs::write(&input, lines.join("\n")).unwrap();
        let (ok, report, stderr) = admin(
            &db,
            dir.path(),
            &["import", "--workspace", &workspace, input.to_str().unwrap()],
        );
        assert!(ok, "{stderr}");
        report
    };
    let first = import(
        "first.jsonl",
        &[
            r#"{"content": "Deploys run on Thursdays at noon."}"#,
            r#"{"content": "I live in Lisbon.", "category": "preference"}"#,
        ],
    );
    assert_eq!(first["created"], 2, "{first}");
    let second = import(
        "second.jsonl",
        &[
            r#"{"content": "Deploys run on Thursdays at noon."}"#,
            r#"{"content": "Deploys run on Thursdays at noon.", "project": "ops"}"#,
            r#"{"content": "The office closes at six on Fridays."}"#,
            r#"{"content": "the office closes at six on fridays"}"#,
            r#"{"content": "I live in Porto."}"#,
        ],
    );
    assert_eq!(second["created"], 2, "{second}");
    assert_eq!(second["duplicates"], 2, "{second}");
    // A fact stored before the import is updated by a line, read as it was stored.
    assert_eq!(second["superseded"], 1, "{second}");
    let output = dir.path().join("out.jsonl");
    let exported = export(&db, dir.path(), &workspace, &output);
    assert_eq!(exported.len(), 5, "{exported:?}");
    let porto = exported
        .iter()
        .find(|m| m["content"] == "I live in Porto.")
        .unwrap();
    assert_eq!(porto["version"], 2, "{porto}");
    assert_eq!(porto["category"], "preference", "{porto}");
}

/// A line's `supersedesId` links it to the line with that `id`, whether that line is in the
/// same batch or an earlier one (batches are 256 lines),
/// and even when the two texts are unrelated, so no fact-update rule would link them.
#[tokio::test]
async fn import_links_versions_by_id_within_and_across_batches() {
    let db = fresh_database().await;
    let dir = tempfile::tempdir().unwrap();
    let (ok, created, stderr) = admin(&db, dir.path(), &["create-workspace", "--name", "Chains"]);
    assert!(ok, "{stderr}");
    let workspace = created["workspaceId"].as_str().unwrap().to_string();
    let first = "11111111-1111-4111-8111-111111111111";
    let second = "22222222-2222-4222-8222-222222222222";
    let mut lines = vec![
        format!(r#"{{"id": "{first}", "content": "The guest wifi password is on the fridge."}}"#),
        format!(r#"{{"id": "{second}", "content": "Quarterly taxes are filed by Dana."}}"#),
        format!(
            r#"{{"supersedesId": "{second}", "content": "The garden hose leaks near the tap."}}"#
        ),
    ];
    let animals = [
        "otter", "heron", "lynx", "badger", "gecko", "falcon", "moose", "newt",
    ];
    let colours = [
        "amber", "teal", "crimson", "olive", "ivory", "indigo", "coral", "slate",
    ];
    for n in 0..297 {
        lines.push(format!(
            r#"{{"content": "Shelf {n} holds the {} {} figurine."}}"#,
            colours[n % 8],
            animals[(n / 8) % 8]
        ));
    }
    lines.push(format!(
        r#"{{"supersedesId": "{first}", "content": "Parking permits renew every March."}}"#
    ));
    let input = dir.path().join("chains.jsonl");
    std::fs::write(&input, lines.join("\n")).unwrap();
    let (ok, report, stderr) = admin(
        &db,
        dir.path(),
        &["import", "--workspace", &workspace, input.to_str().unwrap()],
    );
    assert!(ok, "{stderr}");
    assert_eq!(report["lines"], 301, "{report}");
    assert_eq!(report["failed"], 0, "{report}");
    assert!(report["superseded"].as_u64().unwrap() >= 2, "{report}");

    let output = dir.path().join("out.jsonl");
    let exported = export(&db, dir.path(), &workspace, &output);
    let find = |content: &str| {
        exported
            .iter()
            .find(|m| m["content"] == content)
            .unwrap_or_else(|| panic!("{content} not exported"))
            .clone()
    };
    for (old, new) in [
        (
            "Quarterly taxes are filed by Dana.",
            "The garden hose leaks near the tap.",
        ),
        (
            "The guest wifi password is on the fridge.",
            "Parking permits renew every March.",
        ),
    ] {
        let (old, new) = (find(old), find(new));
        assert_eq!(new["supersedesId"], old["id"], "{new}");
        assert_eq!(new["version"], 2, "{new}");
        assert_eq!(old["isCurrent"], false, "{old}");
    }
}

/// The next batch is read (and embedded) while the one before it is saved: a line of the
/// second batch that cannot be read stops the import with an error naming the input, after
/// the first batch's 256 memories are stored, and no line after it is.
#[tokio::test]
async fn an_unreadable_line_stops_the_import_after_the_batches_before_it() {
    let db = fresh_database().await;
    let dir = tempfile::tempdir().unwrap();
    let (ok, created, stderr) = admin(&db, dir.path(), &["create-workspace", "--name", "Torn"]);
    assert!(ok, "{stderr}");
    let workspace = created["workspaceId"].as_str().unwrap().to_string();
    // Five of forty words, no two lines alike in more than one place, so that no line is a
    // near-duplicate of another.
    let words = [
        "otter", "violin", "harbor", "cactus", "lantern", "glacier", "pepper", "saddle", "comet",
        "walnut", "anchor", "tulip", "quartz", "bison", "kettle", "meadow", "rocket", "velvet",
        "pigeon", "canyon", "mango", "ledger", "falcon", "thimble", "volcano", "cobalt", "oyster",
        "marble", "trumpet", "lagoon", "hammock", "zebra", "crayon", "turnip", "beacon", "parsley",
        "igloo", "magnet", "nectar", "orchid",
    ];
    let line = |n: usize| {
        let (a, b) = (n % 40, n / 40);
        let word = |i: usize| words[i % 40];
        format!(
            "{n}: {} {} {} {} {}",
            word(a),
            word(a + b + 1),
            word(a + 2 * b + 5),
            word(3 * a + b + 7),
            word(7 * a + 3 * b + 11)
        )
    };
    let mut input = Vec::new();
    for n in 0..300 {
        if n == 280 {
            input.extend_from_slice(b"{\"content\": \"torn \xff\xfe line\"}\n");
        } else {
            input.extend_from_slice(format!("{{\"content\": \"{}\"}}\n", line(n)).as_bytes());
        }
    }
    let path = dir.path().join("torn.jsonl");
    std::fs::write(&path, input).unwrap();
    let (ok, _, stderr) = admin(
        &db,
        dir.path(),
        &["import", "--workspace", &workspace, path.to_str().unwrap()],
    );
    assert!(!ok, "the import succeeded: {stderr}");
    assert!(stderr.contains("cannot read the input"), "{stderr}");
    let exported = export(&db, dir.path(), &workspace, &dir.path().join("out.jsonl"));
    let stored: std::collections::HashSet<String> = exported
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    let first_batch: std::collections::HashSet<String> = (0..256).map(line).collect();
    assert_eq!(
        stored, first_batch,
        "the first batch is kept, no later line"
    );
}
