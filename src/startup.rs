//! Start-up: storage, actors, services and the HTTP server, wired together; graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::Router;
use memvault_actors::{RegistryArgs, Workspaces};
use tokio::net::TcpListener;

use crate::config::{Settings, Switch};
use crate::http::{self, AppState};
use crate::services::{AccountsService, MemoryService};
use crate::storage::{self, ActorStore, Store};

pub struct Application {
    listener: TcpListener,
    router: Router,
    store: Arc<dyn Store>,
    workspaces: Workspaces,
    registry: tokio::task::JoinHandle<()>,
}

impl Application {
    pub async fn build(settings: &Settings) -> anyhow::Result<Self> {
        Self::build_with_routes(settings, Router::new()).await
    }

    /// Like [`Application::build`], with extra routes behind the same layers (tests use it).
    pub async fn build_with_routes(
        settings: &Settings,
        extra: Router<AppState>,
    ) -> anyhow::Result<Self> {
        let started = Instant::now();
        let store = storage::connect(settings).await.with_context(|| {
            format!(
                "cannot open the database at {}",
                crate::config::mask_url_password(&settings.database_url())
            )
        })?;
        tracing::info!(backend = ?store.backend(), elapsed_ms = started.elapsed().as_millis() as u64, "database ready, migrations applied");

        let (workspaces, registry) = Workspaces::start(
            RegistryArgs {
                store: Arc::new(ActorStore(store.clone())),
                plans: Arc::new(settings.plan_table()),
                rate_limits: settings.rate_limits == Switch::On,
                idle_timeout: Duration::from_secs(settings.workspace_idle_secs),
                refresh_every: Duration::from_secs(settings.plan_refresh_secs.max(1)),
            },
            Duration::from_millis(settings.actor_call_timeout_ms),
        )
        .await
        .context("cannot start the workspace registry")?;

        let state = AppState {
            accounts: AccountsService::new(store.clone(), Some(workspaces.clone())),
            memories: MemoryService::new(
                store.clone(),
                workspaces.clone(),
                settings.max_content_chars,
            ),
            store: store.clone(),
        };
        let router = http::app(state, settings.max_body_bytes, extra);
        let listener = TcpListener::bind(settings.listen)
            .await
            .with_context(|| format!("cannot listen on {}", settings.listen))?;

        if store.workspace_count().await? == 0 {
            tracing::warn!(
                "no workspace yet: run `memvault admin create-workspace --name NAME` to create one; \
                 it prints the workspace id and its API key (shown once)"
            );
        }
        Ok(Application {
            listener,
            router,
            store,
            workspaces,
            registry,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The store (tests and benchmarks seed workspaces through it).
    pub fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// The workspace actors (tests use it to kill one).
    pub fn workspaces(&self) -> &Workspaces {
        &self.workspaces
    }

    /// Serves until `shutdown` completes, then finishes in-flight requests, stops the actors
    /// and closes the database.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        tracing::info!(address = %self.local_addr(), "memvault listening");
        axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await?;
        tracing::info!("in-flight requests finished, stopping");
        self.workspaces.stop();
        let _ = self.registry.await;
        self.store.close().await;
        Ok(())
    }
}

/// Completes on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    tracing::info!("shutdown signal received");
}
