//! The cluster's ownership rules at the database (issue 29): leases move only away from nodes
//! that are dead, draining or handing over; a takeover waits for the old owner's writes in
//! flight; the fence refuses every write of a node that no longer holds the workspace. These run
//! on PostgreSQL (a cluster needs it); on SQLite, a node refuses to start as a cluster member.

use std::time::Duration;

use memvault::storage::cluster::{fence_connection, Acquired, ClusterStore};
use memvault::storage::{connect_node, NodeFence};
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;
use uuid::Uuid;

use crate::cli::{admin, memvault};
use crate::helpers::{fresh_database, postgres_url, session_cookie_of, test_settings, TestDb};

const TTL: Duration = Duration::from_secs(30);
const WAIT: Duration = Duration::from_millis(300);

/// A pool whose connections write as `node` (what a cluster node's store does).
async fn node_pool(url: &str, node: Uuid) -> PgPool {
    PgPoolOptions::new()
        .max_connections(2)
        .after_connect(move |conn, _| Box::pin(fence_connection(conn, node, TTL)))
        .connect(url)
        .await
        .expect("connect as a node")
}

async fn new_workspace(admin: &PgPool) -> Uuid {
    let id = Uuid::new_v4();
    sqlx::query("INSERT INTO workspaces (id, name, slug, created_at) VALUES ($1, 'w', $2, 0)")
        .bind(id)
        .bind(id.to_string())
        .execute(admin)
        .await
        .expect("insert a workspace");
    id
}

/// A write to the workspace's data (a vault row), as `pool`'s node.
async fn write(pool: &PgPool, workspace: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO vaults (id, workspace_id, name, created_at) VALUES ($1, $2, $3, 0)")
        .bind(Uuid::new_v4())
        .bind(workspace)
        .bind(Uuid::new_v4().to_string())
        .execute(pool)
        .await
        .map(|_| ())
}

fn fenced(result: Result<(), sqlx::Error>) -> bool {
    match result {
        Err(sqlx::Error::Database(db)) => db.code().as_deref() == Some("MV001"),
        _ => false,
    }
}

/// Expires `node` now (as if it had been paused past its TTL).
async fn expire(admin: &PgPool, node: Uuid) {
    sqlx::query(
        "UPDATE cluster_nodes SET expires_at = clock_timestamp() - INTERVAL '1 second' \
         WHERE id = $1",
    )
    .bind(node)
    .execute(admin)
    .await
    .expect("expire a node");
}

struct Nodes {
    admin: PgPool,
    store: ClusterStore,
    a: (Uuid, PgPool),
    b: (Uuid, PgPool),
}

async fn two_nodes() -> Option<Nodes> {
    postgres_url()?;
    let db = fresh_database().await;
    let settings = test_settings(&db);
    let a = Uuid::new_v4();
    // Migrations, and the cluster store, through a node's own connection path.
    let (_, store) = connect_node(&settings, Some(NodeFence { node: a, ttl: TTL }))
        .await
        .expect("connect a node");
    let store = store.expect("a cluster store on PostgreSQL");
    let admin = PgPoolOptions::new()
        .max_connections(2)
        .connect(&db.url)
        .await
        .expect("connect");
    let b = Uuid::new_v4();
    store.register(a, "http://a", TTL).await.unwrap();
    store.register(b, "http://b", TTL).await.unwrap();
    Some(Nodes {
        a: (a, node_pool(&db.url, a).await),
        b: (b, node_pool(&db.url, b).await),
        admin,
        store,
    })
}

#[tokio::test]
async fn a_lease_moves_only_from_a_dead_node_and_fences_it() {
    let Some(n) = two_nodes().await else {
        eprintln!("cluster lease tests run on PostgreSQL only (set MEMVAULT_TEST_DATABASE_URL)");
        return;
    };
    let (a, pool_a) = &n.a;
    let (b, pool_b) = &n.b;
    let w = new_workspace(&n.admin).await;

    // Nobody writes before holding the lease.
    assert!(fenced(write(pool_a, w).await));
    assert_eq!(
        n.store.acquire(w, *a, WAIT).await.unwrap(),
        Acquired::Held(1)
    );
    assert_eq!(
        n.store.acquire(w, *a, WAIT).await.unwrap(),
        Acquired::Held(1)
    );
    write(pool_a, w).await.expect("the owner writes");
    assert!(fenced(write(pool_b, w).await), "another node's write");
    match n.store.acquire(w, *b, WAIT).await.unwrap() {
        Acquired::Taken(lease) => {
            assert_eq!((lease.node_id, lease.serving), (*a, true));
            assert_eq!(lease.url.as_deref(), Some("http://a"));
        }
        other => panic!("a live owner's lease was taken: {other:?}"),
    }

    // The owner is paused past its TTL: its writes stop at once, and the lease moves.
    expire(&n.admin, *a).await;
    assert!(fenced(write(pool_a, w).await), "a dead owner's write");
    assert_eq!(
        n.store.acquire(w, *b, WAIT).await.unwrap(),
        Acquired::Held(2)
    );
    write(pool_b, w).await.expect("the new owner writes");

    // The old owner comes back: it learns it was dead, keeps nothing, and stays fenced.
    assert!(!n.store.beat(*a, TTL).await.unwrap());
    assert!(n
        .store
        .revive(*a, "http://a", TTL)
        .await
        .unwrap()
        .is_empty());
    assert!(n.store.beat(*a, TTL).await.unwrap());
    assert!(fenced(write(pool_a, w).await), "a revived node's write");
    let lease = n.store.lease(w).await.unwrap().unwrap();
    assert_eq!((lease.node_id, lease.epoch), (*b, 2));
}

#[tokio::test]
async fn a_takeover_waits_for_the_old_owners_writes_in_flight() {
    let Some(n) = two_nodes().await else {
        eprintln!("cluster lease tests run on PostgreSQL only (set MEMVAULT_TEST_DATABASE_URL)");
        return;
    };
    let (a, pool_a) = &n.a;
    let (b, pool_b) = &n.b;
    let w = new_workspace(&n.admin).await;
    assert_eq!(
        n.store.acquire(w, *a, WAIT).await.unwrap(),
        Acquired::Held(1)
    );

    // A write under way when the owner is declared dead holds the takeover up.
    let mut tx = pool_a.begin().await.unwrap();
    sqlx::query("INSERT INTO vaults (id, workspace_id, name, created_at) VALUES ($1, $2, 'x', 0)")
        .bind(Uuid::new_v4())
        .bind(w)
        .execute(&mut *tx)
        .await
        .expect("the owner's write passes the fence");
    expire(&n.admin, *a).await;
    assert!(
        n.store.acquire(w, *b, WAIT).await.is_err(),
        "the takeover did not wait for the write in flight"
    );
    tx.commit().await.expect("the write in flight commits");
    assert_eq!(
        n.store.acquire(w, *b, WAIT).await.unwrap(),
        Acquired::Held(2)
    );
    assert!(fenced(write(pool_a, w).await));
    write(pool_b, w).await.unwrap();
    let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM vaults WHERE workspace_id = $1")
        .bind(w)
        .fetch_one(&n.admin)
        .await
        .unwrap();
    assert_eq!(count, 2, "the write in flight and the new owner's");
}

#[tokio::test]
async fn a_handover_moves_the_lease_to_a_serving_node_only() {
    let Some(n) = two_nodes().await else {
        eprintln!("cluster lease tests run on PostgreSQL only (set MEMVAULT_TEST_DATABASE_URL)");
        return;
    };
    let (a, pool_a) = &n.a;
    let (b, pool_b) = &n.b;
    let w = new_workspace(&n.admin).await;
    assert_eq!(
        n.store.acquire(w, *a, WAIT).await.unwrap(),
        Acquired::Held(1)
    );
    assert_eq!(
        n.store.hand_over(w, *b, *a, WAIT).await.unwrap(),
        None,
        "not b's to give"
    );
    assert_eq!(n.store.hand_over(w, *a, *b, WAIT).await.unwrap(), Some(2));
    assert!(fenced(write(pool_a, w).await));
    write(pool_b, w).await.unwrap();

    // A draining node takes nothing; a released lease goes to whoever asks next.
    n.store.drain(*a).await.unwrap();
    assert_eq!(n.store.hand_over(w, *b, *a, WAIT).await.unwrap(), None);
    assert!(n.store.release(w, *b).await.unwrap());
    assert!(fenced(write(pool_b, w).await));
    match n.store.acquire(w, *a, WAIT).await.unwrap() {
        Acquired::Held(epoch) => assert_eq!(epoch, 4),
        other => panic!("{other:?}"),
    }
    let nodes = n.store.nodes().await.unwrap();
    let of = |id: Uuid| nodes.iter().find(|node| node.id == id).unwrap().clone();
    assert!(of(*a).draining && of(*a).alive);
    assert_eq!((of(*a).workspaces, of(*b).workspaces), (1, 0));

    // A node that leaves frees its leases at once.
    n.store.leave(*a).await.unwrap();
    assert_eq!(
        n.store.acquire(w, *b, WAIT).await.unwrap(),
        Acquired::Held(5)
    );
}

#[tokio::test]
async fn a_cluster_needs_postgresql() {
    if postgres_url().is_some() {
        return;
    }
    let db = fresh_database().await;
    let settings = test_settings(&db);
    let fence = NodeFence {
        node: Uuid::new_v4(),
        ttl: TTL,
    };
    let error = connect_node(&settings, Some(fence))
        .await
        .err()
        .expect("SQLite refused as a cluster");
    assert!(error.to_string().contains("PostgreSQL"), "{error}");
}

// ----- nodes: `memvault serve` processes on loopback, one PostgreSQL database ---------------

const SECRET: &str = "a-cluster-secret-for-tests";

/// A node process (killed when dropped).
struct Node {
    child: std::process::Child,
    url: String,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Starts a node and waits until it is ready; its log goes to `dir/node-PORT.log`.
async fn start_node(db: &TestDb, dir: &std::path::Path) -> Node {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let log = std::fs::File::create(dir.join(format!("node-{port}.log"))).expect("log file");
    let child = memvault(db, dir)
        .arg("serve")
        .env("MEMVAULT_LISTEN", format!("127.0.0.1:{port}"))
        .env("MEMVAULT_NODE_URL", &url)
        .env("MEMVAULT_CLUSTER_SECRET", SECRET)
        .env("MEMVAULT_CLUSTER__LEASE_TTL_MS", "2000")
        .env("MEMVAULT_CLUSTER__HEARTBEAT_MS", "300")
        .env("MEMVAULT_LOG_LEVEL", "info")
        // Password hashes wait for a slot as long as they need on a busy test machine.
        .env("MEMVAULT_ABUSE__PASSWORD_HASH_WAIT_MS", "60000")
        .env("MEMVAULT_WORKER__DIR", dir.join(format!("workers-{port}")))
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start a node");
    let node = Node { child, url };
    let client = reqwest::Client::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(r) = client.get(format!("{}/readyz", node.url)).send().await {
            if r.status() == 200 {
                return node;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "node {} did not become ready (log in {})",
            node.url,
            dir.display()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

struct Cluster {
    db: TestDb,
    dir: tempfile::TempDir,
    nodes: Vec<Node>,
    client: reqwest::Client,
}

impl Cluster {
    async fn start(n: usize) -> Option<Cluster> {
        postgres_url()?;
        let db = fresh_database().await;
        let dir = tempfile::tempdir().expect("temp dir");
        let mut nodes = Vec::new();
        for _ in 0..n {
            nodes.push(start_node(&db, dir.path()).await);
        }
        Some(Cluster {
            db,
            dir,
            nodes,
            client: reqwest::Client::new(),
        })
    }

    /// A new workspace on `plan`: its API key.
    fn workspace(&self, plan: &str) -> String {
        self.workspace_and_id(plan).0
    }

    /// A new workspace on `plan`: its API key and id.
    fn workspace_and_id(&self, plan: &str) -> (String, String) {
        let (ok, created, stderr) = admin(
            &self.db,
            self.dir.path(),
            &["create-workspace", "--name", "Acme", "--plan", plan],
        );
        assert!(ok, "{stderr}");
        (
            created["apiKey"].as_str().expect("apiKey").to_string(),
            created["workspaceId"]
                .as_str()
                .expect("workspaceId")
                .to_string(),
        )
    }

    fn node(&self, i: usize) -> &Node {
        &self.nodes[i % self.nodes.len()]
    }

    fn request(
        &self,
        i: usize,
        method: reqwest::Method,
        path: &str,
        key: &str,
    ) -> reqwest::RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.node(i).url))
            .header("X-API-Key", key)
    }
}

fn served_by(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("x-memvault-node")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

/// Three nodes serve one workspace as one service: a memory saved through any node is read and
/// found through every node, always by the same owner; rate limits count across nodes; a plan
/// changed from the command line applies within a second.
#[tokio::test]
async fn three_nodes_serve_a_workspace_as_one() {
    let Some(cluster) = Cluster::start(3).await else {
        eprintln!("cluster tests run on PostgreSQL only (set MEMVAULT_TEST_DATABASE_URL)");
        return;
    };
    let key = cluster.workspace("pro");
    let mut ids = Vec::new();
    let mut owners = std::collections::BTreeSet::new();
    for (i, fact) in [
        "I live in Lisbon",
        "my dog is called Pixel",
        "I work at Globex on rockets",
    ]
    .into_iter()
    .enumerate()
    {
        let response = cluster
            .request(i, reqwest::Method::POST, "/api/memories", &key)
            .json(&serde_json::json!({"content": fact, "scope": "u1"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201, "save through node {i}");
        owners.insert(served_by(&response));
        let body: serde_json::Value = response.json().await.unwrap();
        ids.push(body["memory"]["id"].as_str().unwrap().to_string());
    }
    assert_eq!(owners.len(), 1, "one owner answered every save: {owners:?}");
    for i in 0..3 {
        for id in &ids {
            let response = cluster
                .request(
                    i,
                    reqwest::Method::GET,
                    &format!("/api/memories/{id}?scope=u1"),
                    &key,
                )
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200, "read {id} through node {i}");
            assert!(owners.contains(&served_by(&response)));
        }
        let response = cluster
            .request(
                i,
                reqwest::Method::GET,
                "/api/memories/search?q=which+city+do+I+live+in&scope=u1",
                &key,
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(
            body["results"][0]["id"],
            ids[0].as_str(),
            "search through node {i}: {body}"
        );
    }

    // Rate limits are exact across nodes: 40 parallel saves on free, spread over the nodes.
    let (free, free_id) = cluster.workspace_and_id("free");
    let mut saves = Vec::new();
    for i in 0..40 {
        let request = cluster
            .request(i, reqwest::Method::POST, "/api/memories", &free)
            .json(&serde_json::json!({"content": format!("parallel fact number {i}")}));
        saves.push(tokio::spawn(async move {
            request.send().await.map(|r| r.status().as_u16())
        }));
    }
    let mut statuses = std::collections::BTreeMap::new();
    for save in saves {
        *statuses.entry(save.await.unwrap().unwrap()).or_insert(0) += 1;
    }
    assert_eq!(
        statuses,
        std::collections::BTreeMap::from([(201, 30), (429, 10)]),
        "{statuses:?}"
    );

    // The command line raises the plan (no node is involved): the owner applies it at once.
    let (ok, _, stderr) = admin(
        &cluster.db,
        cluster.dir.path(),
        &["set-plan", "--workspace", &free_id, "--plan", "pro"],
    );
    assert!(ok, "{stderr}");
    let changed_at = std::time::Instant::now();
    for i in 0.. {
        let response = cluster
            .request(i, reqwest::Method::POST, "/api/memories", &free)
            .json(&serde_json::json!({"content": format!("saved after the upgrade {i}")}))
            .send()
            .await
            .unwrap();
        if response.status() == 201 {
            break;
        }
        assert_eq!(response.status(), 429);
        assert!(
            changed_at.elapsed() < Duration::from_secs(1),
            "the new plan is not applied after {:?}",
            changed_at.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

impl Cluster {
    /// Which node answers for the workspace of `key` (its index), after one read.
    async fn owner_of(&self, key: &str) -> usize {
        let response = self
            .request(0, reqwest::Method::GET, "/api/memories", key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let owner = served_by(&response);
        for i in 0..self.nodes.len() {
            if self.node_id(i).await == owner {
                return i;
            }
        }
        panic!("no node is {owner}")
    }

    /// A node's id (every answer of a cluster node names it; `/healthz` is served locally).
    async fn node_id(&self, i: usize) -> String {
        let response = self
            .client
            .get(format!("{}/healthz", self.node(i).url))
            .send()
            .await
            .unwrap();
        served_by(&response)
    }

    fn log_of(&self, i: usize) -> String {
        let port = self.node(i).url.rsplit(':').next().unwrap().to_string();
        std::fs::read_to_string(self.dir.path().join(format!("node-{port}.log")))
            .unwrap_or_default()
    }
}

/// What a writer saw: every acknowledged save's id, when the first acknowledgement after a
/// moment came, and how many saves ended without an answer either way.
#[derive(Default)]
struct Writes {
    acknowledged: Vec<(String, String)>,
    acked_at: Vec<std::time::Instant>,
    in_doubt: usize,
}

/// Saves unique memories through `nodes` in turn until `stop`.
async fn write_until(
    cluster: &Cluster,
    key: &str,
    nodes: &[usize],
    stop: std::time::Instant,
    prefix: &str,
) -> Writes {
    let mut writes = Writes::default();
    let mut n = 0;
    while std::time::Instant::now() < stop {
        let node = nodes[n % nodes.len()];
        let content = format!("{prefix} fact number {n}");
        n += 1;
        let sent = cluster
            .request(node, reqwest::Method::POST, "/api/memories", key)
            .timeout(Duration::from_secs(10))
            .json(&serde_json::json!({"content": content}))
            .send()
            .await;
        match sent {
            Ok(response) if response.status() == 201 => {
                let body: serde_json::Value = response.json().await.unwrap();
                let id = body["memory"]["id"].as_str().unwrap().to_string();
                writes.acknowledged.push((id, content));
                writes.acked_at.push(std::time::Instant::now());
            }
            // Refused before anything was written (the workspace is moving, or its owner is
            // unreachable): retried as a new save.
            Ok(response) if response.status() == 503 => {}
            Ok(response) => {
                let status = response.status();
                let body = response.text().await.unwrap_or_default();
                let logs: String = (0..cluster.nodes.len())
                    .map(|i| cluster.log_of(i))
                    .flat_map(|log| {
                        log.lines()
                            .filter(|l| l.contains("ERROR") || l.contains("WARN"))
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                panic!("save through node {node}: {status} {body}\n{logs}")
            }
            Err(_) => writes.in_doubt += 1,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    writes
}

/// Every acknowledged save reads back through node `i`.
async fn assert_readable(cluster: &Cluster, key: &str, i: usize, writes: &Writes) {
    for (id, content) in &writes.acknowledged {
        let response = cluster
            .request(i, reqwest::Method::GET, &format!("/api/memories/{id}"), key)
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            200,
            "acknowledged save {id} read through node {i}"
        );
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["content"], content.as_str());
    }
}

/// kill -9 of a busy workspace's owner: saves through the other nodes succeed again within
/// 15 s, and every acknowledged save is there.
#[tokio::test]
async fn a_killed_owners_workspace_moves_and_keeps_every_acknowledged_save() {
    let Some(mut cluster) = Cluster::start(3).await else {
        eprintln!("cluster tests run on PostgreSQL only (set MEMVAULT_TEST_DATABASE_URL)");
        return;
    };
    let key = cluster.workspace("ultimate");
    let owner = cluster.owner_of(&key).await;
    let others: Vec<usize> = (0..3).filter(|i| *i != owner).collect();
    let before = write_until(
        &cluster,
        &key,
        &others,
        std::time::Instant::now() + Duration::from_secs(1),
        "before",
    )
    .await;
    assert!(!before.acknowledged.is_empty());
    cluster.nodes[owner]
        .child
        .kill()
        .expect("kill -9 the owner");
    let killed = std::time::Instant::now();
    let after = write_until(
        &cluster,
        &key,
        &others,
        killed + Duration::from_secs(8),
        "after",
    )
    .await;
    let first = after
        .acked_at
        .first()
        .expect("no save succeeded after the kill");
    assert!(
        first.duration_since(killed) < Duration::from_secs(15),
        "saves resumed {:?} after the kill",
        first.duration_since(killed)
    );
    for i in &others {
        assert_readable(&cluster, &key, *i, &before).await;
        assert_readable(&cluster, &key, *i, &after).await;
    }
}

/// SIGSTOP of an owner past its lease, then SIGCONT: the others took the workspace over; the
/// paused node learns it was declared dead, forgets what moved, rejoins and serves again; no
/// acknowledged save is lost and none is stored twice.
#[tokio::test]
async fn a_paused_owner_is_fenced_and_rejoins() {
    let Some(cluster) = Cluster::start(3).await else {
        eprintln!("cluster tests run on PostgreSQL only (set MEMVAULT_TEST_DATABASE_URL)");
        return;
    };
    let key = cluster.workspace("ultimate");
    let owner = cluster.owner_of(&key).await;
    let pid = cluster.nodes[owner].child.id().to_string();
    let signal = |name: &str| {
        assert!(std::process::Command::new("kill")
            .args([name, &pid])
            .status()
            .unwrap()
            .success());
    };
    // Saves through every node, the owner too, while it is paused for 2.5 leases.
    let all = [0, 1, 2];
    let writer = write_until(
        &cluster,
        &key,
        &all,
        std::time::Instant::now() + Duration::from_secs(9),
        "paused",
    );
    let pause = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        signal("-STOP");
        tokio::time::sleep(Duration::from_secs(5)).await;
        signal("-CONT");
    };
    let (writes, ()) = tokio::join!(writer, pause);
    assert!(!writes.acknowledged.is_empty());
    for i in 0..3 {
        assert_readable(&cluster, &key, i, &writes).await;
    }
    assert!(
        cluster.log_of(owner).contains("declared dead"),
        "the paused node did not notice it had been declared dead"
    );
    // It serves again.
    let response = cluster
        .request(owner, reqwest::Method::POST, "/api/memories", &key)
        .json(&serde_json::json!({"content": "after the pause"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    // Nothing stored twice, nothing stored that nobody could have acknowledged.
    let db = sqlx::PgPool::connect(&cluster.db.url).await.unwrap();
    let (rows, distinct): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), COUNT(DISTINCT content) FROM memories WHERE content LIKE 'paused fact%'",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(rows, distinct, "a save was stored twice");
    let acked = writes.acknowledged.len() as i64;
    assert!(
        rows >= acked && rows <= acked + writes.in_doubt as i64,
        "{rows} stored, {acked} acknowledged, {} in doubt",
        writes.in_doubt
    );
}

/// A key revoked through one node is refused by every node within a second.
#[tokio::test]
async fn a_revoked_key_is_refused_everywhere_within_a_second() {
    let Some(cluster) = Cluster::start(3).await else {
        eprintln!("cluster tests run on PostgreSQL only (set MEMVAULT_TEST_DATABASE_URL)");
        return;
    };
    let signed_up = cluster
        .client
        .post(format!("{}/api/auth/sign-up", cluster.node(0).url))
        .json(&serde_json::json!({"email": "owner@example.com", "password": "a long password"}))
        .send()
        .await
        .unwrap();
    let status = signed_up.status();
    assert_eq!(status, 201, "{:?}", signed_up.text().await);
    let signed_up = cluster
        .client
        .post(format!("{}/api/auth/sign-in", cluster.node(2).url))
        .json(&serde_json::json!({"email": "owner@example.com", "password": "a long password"}))
        .send()
        .await
        .unwrap();
    assert_eq!(signed_up.status(), 200);
    let cookie = session_cookie_of(&signed_up);
    let body: serde_json::Value = signed_up.json().await.unwrap();
    let workspace = body["workspaces"][0]["id"].as_str().unwrap().to_string();
    let as_user = |i: usize, method: reqwest::Method, path: &str| {
        let url = &cluster.node(i).url;
        cluster
            .client
            .request(method, format!("{url}{path}"))
            .header("cookie", &cookie)
            .header("origin", url)
    };
    let created = as_user(
        1,
        reqwest::Method::POST,
        &format!("/api/workspaces/{workspace}/api-keys"),
    )
    .json(&serde_json::json!({"name": "ci"}))
    .send()
    .await
    .unwrap();
    let status = created.status();
    let created: serde_json::Value = created.json().await.unwrap();
    assert_eq!(status, 201, "{created}");
    let key = created["key"].as_str().unwrap().to_string();
    let key_id = created["apiKey"]["id"].as_str().unwrap().to_string();
    for i in 0..3 {
        let response = cluster
            .request(i, reqwest::Method::GET, "/api/memories", &key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "the key works through node {i}");
    }
    let revoked = as_user(
        0,
        reqwest::Method::DELETE,
        &format!("/api/workspaces/{workspace}/api-keys/{key_id}"),
    )
    .send()
    .await
    .unwrap();
    assert!(revoked.status().is_success(), "{}", revoked.status());
    let revoked_at = std::time::Instant::now();
    for i in 0..3 {
        loop {
            let response = cluster
                .request(i, reqwest::Method::GET, "/api/memories", &key)
                .send()
                .await
                .unwrap();
            if response.status() == 401 {
                break;
            }
            assert!(
                revoked_at.elapsed() < Duration::from_secs(1),
                "node {i} still accepts the revoked key after {:?}",
                revoked_at.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A document ingested through one node completes and is found through another.
#[tokio::test]
async fn a_document_ingested_through_one_node_is_found_through_another() {
    let Some(cluster) = Cluster::start(3).await else {
        eprintln!("cluster tests run on PostgreSQL only (set MEMVAULT_TEST_DATABASE_URL)");
        return;
    };
    let key = cluster.workspace("pro");
    let accepted = cluster
        .request(
            0,
            reqwest::Method::POST,
            "/api/context-vault/documents",
            &key,
        )
        .json(&serde_json::json!({
            "title": "Travel policy",
            "content": "Employees may book business class on flights longer than eight hours. \
                        Hotel stays are reimbursed up to 180 euros a night.",
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(accepted.status(), 202);
    let accepted: serde_json::Value = accepted.json().await.unwrap();
    let id = accepted["document"]["id"].as_str().unwrap().to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let response = cluster
            .request(
                1,
                reqwest::Method::GET,
                &format!("/api/context-vault/documents/{id}"),
                &key,
            )
            .send()
            .await
            .unwrap();
        let body: serde_json::Value = response.json().await.unwrap();
        let status = &body["document"]["status"];
        if status == "completed" {
            break;
        }
        assert!(status != "failed", "{body}");
        assert!(
            std::time::Instant::now() < deadline,
            "not completed: {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let found = cluster
        .request(
            2,
            reqwest::Method::GET,
            "/api/context-vault/search?q=hotel+reimbursement+per+night",
            &key,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(found.status(), 200);
    let found: serde_json::Value = found.json().await.unwrap();
    assert!(found.to_string().contains("180 euros"), "{found}");
}

/// A fourth node joins: it takes its share of the workspaces by handover, and clients see no
/// error meanwhile.
#[tokio::test]
async fn a_joining_node_takes_workspaces_without_errors() {
    let Some(mut cluster) = Cluster::start(3).await else {
        eprintln!("cluster tests run on PostgreSQL only (set MEMVAULT_TEST_DATABASE_URL)");
        return;
    };
    let keys: Vec<String> = (0..40).map(|_| cluster.workspace("ultimate")).collect();
    for (i, key) in keys.iter().enumerate() {
        let response = cluster
            .request(i, reqwest::Method::GET, "/api/memories", key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let fourth = start_node(&cluster.db, cluster.dir.path()).await;
    cluster.nodes.push(fourth);
    let newcomer = cluster.node_id(3).await;
    let until = std::time::Instant::now() + Duration::from_secs(6);
    let mut round = 0;
    let mut on_newcomer = std::collections::BTreeSet::new();
    while std::time::Instant::now() < until {
        for (i, key) in keys.iter().enumerate() {
            let response = cluster
                .request(i + round, reqwest::Method::POST, "/api/memories", key)
                .json(&serde_json::json!({"content": format!("round {round} of workspace {i}")}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 201, "workspace {i} in round {round}");
            if served_by(&response) == newcomer {
                on_newcomer.insert(i);
            }
        }
        round += 1;
    }
    assert!(!on_newcomer.is_empty(), "the new node took no workspace");

    // Operators see the four nodes and who owns how many workspaces.
    let ready: serde_json::Value = cluster
        .client
        .get(format!("{}/readyz", cluster.node(0).url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ready["parts"]["cluster"], "ok", "{ready}");
    let nodes = ready["cluster"]["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 4, "{ready}");
    assert!(nodes.iter().all(|n| n["state"] == "serving"), "{ready}");
    let owned: i64 = nodes
        .iter()
        .map(|n| n["workspaces"].as_i64().unwrap())
        .sum();
    assert_eq!(owned, 40, "{ready}");
    let (ok, listed, stderr) = admin(&cluster.db, cluster.dir.path(), &["cluster"]);
    assert!(ok, "{stderr}");
    assert_eq!(listed["nodes"].as_array().unwrap().len(), 4, "{listed}");
}

/// A node told to stop (SIGTERM) hands its workspaces over before it exits: clients using the
/// other nodes see no error, and the node leaves the member list.
#[tokio::test]
async fn a_stopping_node_hands_its_workspaces_over() {
    let Some(mut cluster) = Cluster::start(3).await else {
        eprintln!("cluster tests run on PostgreSQL only (set MEMVAULT_TEST_DATABASE_URL)");
        return;
    };
    let keys: Vec<String> = (0..12).map(|_| cluster.workspace("ultimate")).collect();
    for (i, key) in keys.iter().enumerate() {
        let response = cluster
            .request(i, reqwest::Method::GET, "/api/memories", key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let stopping = 2;
    let gone = cluster.node_id(stopping).await;
    let pid = cluster.nodes[stopping].child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let exited = loop {
        if let Some(status) = cluster.nodes[stopping].child.try_wait().unwrap() {
            break status;
        }
        for (i, key) in keys.iter().enumerate() {
            let response = cluster
                .request(i % 2, reqwest::Method::POST, "/api/memories", key)
                .json(&serde_json::json!({"content": format!("while node 2 stops, workspace {i}")}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 201, "workspace {i} while a node stops");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the node did not stop"
        );
    };
    assert!(exited.success(), "{exited}");
    assert!(cluster.log_of(stopping).contains("left the cluster"));
    for (i, key) in keys.iter().enumerate() {
        let response = cluster
            .request(i % 2, reqwest::Method::POST, "/api/memories", key)
            .json(&serde_json::json!({"content": format!("after node 2 stopped, workspace {i}")}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        assert_ne!(served_by(&response), gone);
    }
    let (ok, listed, stderr) = admin(&cluster.db, cluster.dir.path(), &["cluster"]);
    assert!(ok, "{stderr}");
    assert_eq!(listed["nodes"].as_array().unwrap().len(), 2, "{listed}");
}

/// One MCP exchange through node `i`: status, session, answer.
async fn mcp(
    cluster: &Cluster,
    i: usize,
    key: &str,
    session: Option<&str>,
    body: serde_json::Value,
) -> (u16, Option<String>, serde_json::Value) {
    let url = format!("{}/mcp", cluster.node(i).url);
    crate::mcp::rpc_to(&cluster.client, &url, crate::mcp::key(key), session, body).await
}

/// An MCP session opened through one node is used through the others.
#[tokio::test]
async fn an_mcp_session_works_through_any_node() {
    let Some(cluster) = Cluster::start(3).await else {
        eprintln!("cluster tests run on PostgreSQL only (set MEMVAULT_TEST_DATABASE_URL)");
        return;
    };
    let key = cluster.workspace("pro");
    let (status, session, init) = mcp(
        &cluster,
        0,
        &key,
        None,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "memvault-cluster-test", "version": "1"}
        }}),
    )
    .await;
    assert_eq!(status, 200, "{init}");
    let session = session.expect("a session id");
    let (status, _, _) = mcp(
        &cluster,
        1,
        &key,
        Some(&session),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(status, 202);
    let (status, _, saved) = mcp(
        &cluster,
        2,
        &key,
        Some(&session),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "memory_save",
            "arguments": {"content": "I prefer window seats on trains"}
        }}),
    )
    .await;
    assert_eq!(status, 200, "{saved}");
    assert!(saved["result"]["isError"] != true, "{saved}");
    let listed: serde_json::Value = cluster
        .request(1, reqwest::Method::GET, "/api/memories", &key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(listed.to_string().contains("window seats"), "{listed}");
}
