//! memvault started in-process for a benchmark: its settings, the backend and workspace it is
//! checked and set up with, and serving it until the benchmark stops it.

use std::time::Duration;

use anyhow::{bail, Context};
use memvault::config::{MemoryLimits, Settings, Switch};
use memvault::model::Workspace;
use memvault::services::AccountsService;
use memvault::startup::Application;
use memvault::storage::Backend;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The memory limit of every plan during a benchmark: never reached.
pub const NO_MEMORY_LIMIT: u64 = 10_000_000;

/// `settings` for a benchmark server: port 0 on 127.0.0.1, rate limits off, every plan's memory
/// limit at [`NO_MEMORY_LIMIT`], document workers started from the memvault binary Cargo built
/// (the benchmark's own executable is not memvault).
pub fn bench_settings(mut settings: Settings) -> Settings {
    settings.vault.worker.program = Some(env!("CARGO_BIN_EXE_memvault").into());
    settings.server.listen = ([127, 0, 0, 1], 0).into();
    settings.accounts.rate_limits = Switch::Off;
    settings.accounts.memory_limits = MemoryLimits {
        free: NO_MEMORY_LIMIT,
        hobby: NO_MEMORY_LIMIT,
        pro: NO_MEMORY_LIMIT,
        ultimate: NO_MEMORY_LIMIT,
    };
    settings
}

/// How the local model multiplies under `settings` on this CPU, for a report.
pub fn model_precision(settings: &Settings) -> &'static str {
    memvault::embedding::products_for(settings.embedding.precision).describe()
}

/// An error unless `app` opened PostgreSQL when `postgres`, SQLite otherwise.
pub fn check_backend(app: &Application, postgres: bool) -> anyhow::Result<()> {
    let expected_backend = if postgres {
        Backend::Postgres
    } else {
        Backend::Sqlite
    };
    if app.store().backend() != expected_backend {
        bail!(
            "memvault opened {:?}, not {expected_backend:?}",
            app.store().backend()
        );
    }
    Ok(())
}

/// A new workspace named `name` and its API key, made through `AccountsService`.
pub async fn create_workspace(
    app: &Application,
    name: &str,
) -> anyhow::Result<(Workspace, String)> {
    AccountsService::new(
        app.store(),
        Some(app.workspaces().clone()),
        Default::default(),
    )
    .create_workspace(name, None)
    .await
    .context("cannot create the benchmark workspace")
}

/// memvault serving in this process until [`Running::stop`] (or until dropped).
pub struct Running {
    /// `http://` and the address it listens on.
    pub base: String,
    stop: oneshot::Sender<()>,
    server: JoinHandle<anyhow::Result<()>>,
}

impl Running {
    /// Serves `app` on a task of its own.
    pub fn serve(app: Application) -> Running {
        let base = format!("http://{}", app.local_addr());
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(app.run_until(async {
            let _ = stopped.await;
        }));
        Running { base, stop, server }
    }

    /// Stops it gracefully and waits, `within` at most.
    pub async fn stop(self, within: Duration) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        match tokio::time::timeout(within, self.server).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(error))) => Err(error.context("the server failed")),
            Ok(Err(join)) => bail!("the server task failed: {join}"),
            Err(_) => bail!("the server did not stop within {} s", within.as_secs()),
        }
    }
}
