//! The command line: `memvault serve` and the `admin` commands (JSON on stdout, logs on
//! stderr).

use anyhow::Context;
use clap::{Parser, Subcommand};
use serde_json::json;
use uuid::Uuid;

use crate::config::Settings;
use crate::model::Plan;
use crate::services::AccountsService;
use crate::startup::{shutdown_signal, Application};
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
    /// Change a workspace's plan (a running server applies it within its plan refresh period).
    SetPlan {
        #[arg(long)]
        workspace: Uuid,
        #[arg(long)]
        plan: Plan,
    },
}

pub async fn run(cli: Cli, settings: Settings) -> anyhow::Result<()> {
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            tracing::info!(config = %settings.redacted(), "effective configuration");
            let app = Application::build(&settings).await?;
            app.run_until(shutdown_signal()).await
        }
        Command::Admin(admin) => {
            let store = storage::connect(&settings)
                .await
                .context("cannot open the database")?;
            let accounts = AccountsService::new(store.clone(), None);
            let result = match admin {
                Admin::CreateWorkspace { name, plan } => {
                    let (workspace, key) = accounts.create_workspace(&name, plan).await?;
                    json!({ "workspaceId": workspace.id, "apiKey": key })
                }
                Admin::SetPlan { workspace, plan } => {
                    accounts.set_plan(workspace, plan).await?;
                    json!({ "workspaceId": workspace, "plan": plan })
                }
            };
            store.close().await;
            println!("{result}");
            Ok(())
        }
    }
}
