//! The command line: `memvault serve` and the `admin` commands (JSON on stdout, logs on
//! stderr).

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use serde_json::json;
use uuid::Uuid;

use crate::config::Settings;
use crate::model::Plan;
use crate::services::memories::export;
use crate::services::AccountsService;
use crate::startup::{shutdown_signal, Application, Overrides};
use crate::storage;

#[derive(Debug, Parser)]
#[command(
    name = "memvault",
    version,
    about = "A self-hostable memory and context vault for AI applications"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the server (the default).
    Serve,
    /// Administration of this installation.
    #[command(subcommand)]
    Admin(Admin),
}

#[derive(Debug, Subcommand)]
pub enum Admin {
    /// Create a workspace and its first API key; prints {"workspaceId", "apiKey"} (the key is
    /// shown once).
    CreateWorkspace {
        #[arg(long)]
        name: String,
        /// free (default), hobby, pro or ultimate.
        #[arg(long)]
        plan: Option<Plan>,
    },
    /// Change a workspace's plan (a running server applies it within its plan refresh period,
    /// the nodes of a cluster at once).
    SetPlan {
        #[arg(long)]
        workspace: Uuid,
        #[arg(long)]
        plan: Plan,
    },
    /// Load memories from a JSON-lines file (one memory per line; `content` required) through
    /// the save path: dedup, supersession, batched embedding. Prints a report.
    Import {
        #[arg(long)]
        workspace: Uuid,
        /// The file to read (`-` for stdin).
        file: PathBuf,
    },
    /// Write every memory of a workspace, with its history, as JSON lines.
    Export {
        #[arg(long)]
        workspace: Uuid,
        /// Only this scope's memories (an end user's, before erasing them).
        #[arg(long)]
        scope: Option<String>,
        /// Where to write (default: stdout).
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Re-embed every current memory with the configured model (after a model change).
    Reembed,
    /// The nodes of a cluster (PostgreSQL): each one's URL, heartbeat, state and how many
    /// workspaces it owns, as JSON.
    Cluster,
}

pub async fn run(cli: Cli, settings: Settings) -> anyhow::Result<()> {
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            tracing::info!(config = %settings.redacted(), "effective configuration");
            let app = Application::build(&settings).await?;
            app.run_until(shutdown_signal()).await
        }
        Command::Admin(Admin::Import { workspace, file }) => {
            let app = offline_app(&settings, false).await?;
            let input: Box<dyn BufRead + Send> = if file.as_os_str() == "-" {
                Box::new(std::io::BufReader::new(std::io::stdin()))
            } else {
                Box::new(std::io::BufReader::new(
                    std::fs::File::open(&file)
                        .with_context(|| format!("cannot open {}", file.display()))?,
                ))
            };
            let terminal = std::io::stderr().is_terminal();
            let started = std::time::Instant::now();
            let report = app
                .memories()
                .import(workspace, input, |done| {
                    if terminal {
                        let rate = done as f64 / started.elapsed().as_secs_f64().max(0.001);
                        eprint!("\rimported {done} lines ({rate:.0}/s)   ");
                        let _ = std::io::stderr().flush();
                    }
                })
                .await?;
            if terminal {
                eprintln!();
            }
            println!("{}", serde_json::to_string(&report)?);
            Ok(())
        }
        Command::Admin(Admin::Cluster) => {
            anyhow::ensure!(
                settings.is_postgres(),
                "a cluster runs on PostgreSQL: set DATABASE_URL=postgres://..."
            );
            let pool = sqlx::PgPool::connect(&settings.database_url())
                .await
                .context("cannot open the database")?;
            let nodes = storage::cluster::ClusterStore::new(pool).nodes().await?;
            let now = chrono::Utc::now().timestamp_micros();
            let shown: Vec<_> = nodes
                .iter()
                .map(|n| {
                    json!({
                        "id": n.id,
                        "url": n.url,
                        "state": if !n.alive { "dead" } else if n.draining { "draining" } else { "serving" },
                        "heartbeatAgeMs": (now - n.heartbeat_at) / 1000,
                        "upMs": n.age_ms,
                        "workspaces": n.workspaces,
                        "revivals": n.revivals,
                    })
                })
                .collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&json!({"nodes": shown}))?
            );
            Ok(())
        }
        Command::Admin(Admin::Reembed) => {
            let app = offline_app(&settings, true).await?;
            let report = app.memories().rebuild_indexes(true).await?;
            println!(
                "{}",
                json!({"reembedded": report.embedded, "elapsedMs": report.elapsed.as_millis() as u64})
            );
            Ok(())
        }
        Command::Admin(Admin::Export {
            workspace,
            scope,
            output,
        }) => {
            let scope = scope.as_deref();
            let store = open_store(&settings).await?;
            let written = match output {
                Some(path) => {
                    let mut file = std::io::BufWriter::new(
                        std::fs::File::create(&path)
                            .with_context(|| format!("cannot create {}", path.display()))?,
                    );
                    let written = export(&*store, workspace, scope, &mut file).await?;
                    eprintln!("exported {written} memories to {}", path.display());
                    written
                }
                None => {
                    export(
                        &*store,
                        workspace,
                        scope,
                        &mut std::io::BufWriter::new(std::io::stdout()),
                    )
                    .await?
                }
            };
            store.close().await;
            tracing::info!(memories = written, "export finished");
            Ok(())
        }
        Command::Admin(Admin::CreateWorkspace { name, plan }) => {
            let store = open_store(&settings).await?;
            let created = AccountsService::new(store.clone(), None, Default::default())
                .create_workspace(&name, plan)
                .await;
            store.close().await;
            let (workspace, key) = created?;
            println!("{}", json!({ "workspaceId": workspace.id, "apiKey": key }));
            Ok(())
        }
        Command::Admin(Admin::SetPlan { workspace, plan }) => {
            let store = open_store(&settings).await?;
            let changed = AccountsService::new(store.clone(), None, Default::default())
                .set_plan(workspace, plan)
                .await;
            store.close().await;
            changed?;
            println!("{}", json!({ "workspaceId": workspace, "plan": plan }));
            Ok(())
        }
    }
}

async fn open_store(settings: &Settings) -> anyhow::Result<std::sync::Arc<dyn storage::Store>> {
    storage::connect(settings)
        .await
        .context("cannot open the database")
}

/// The services without serving: listens on a free loopback port that nothing uses, so a
/// running server is not disturbed.
async fn offline_app(settings: &Settings, skip_index_rebuild: bool) -> anyhow::Result<Application> {
    let mut settings = settings.clone();
    settings.server.listen = "127.0.0.1:0".parse().expect("a literal address");
    // A command is never a cluster node, even where MEMVAULT_NODE_URL is set for the server.
    settings.cluster.node_url = None;
    Application::build_with(
        &settings,
        Overrides {
            skip_index_rebuild,
            skip_resume: true,
            ..Overrides::default()
        },
    )
    .await
}
