//! The cluster's tables (PostgreSQL only, `migrations/postgres/0010_cluster.sql`): nodes and
//! their heartbeats, and one lease per workspace with its epoch. Liveness is judged by the
//! database's clock in every statement, never by a node's.

use std::time::Duration;

use sqlx::{FromRow, PgPool};
use uuid::Uuid;

use super::StoreResult;
use crate::error::StorageError;

/// A node as the table shows it.
#[derive(Debug, Clone, PartialEq, FromRow)]
pub struct NodeRow {
    pub id: Uuid,
    pub url: String,
    /// Microseconds since the epoch (database clock).
    pub started_at: i64,
    pub heartbeat_at: i64,
    pub expires_at: i64,
    pub draining: bool,
    pub revivals: i64,
    /// Its heartbeat is within its TTL.
    pub alive: bool,
    /// How long ago it started, in milliseconds.
    pub age_ms: i64,
    /// Workspaces whose lease names it.
    pub workspaces: i64,
}

/// A workspace's lease with what is known of its owner.
#[derive(Debug, Clone, PartialEq, FromRow)]
pub struct LeaseRow {
    pub workspace_id: Uuid,
    pub node_id: Uuid,
    pub epoch: i64,
    /// The owner's URL; `None` when the owner's row is gone (it left).
    pub url: Option<String>,
    /// The owner is registered, within its TTL and not draining: it serves the workspace.
    pub serving: bool,
}

/// What [`ClusterStore::acquire`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Acquired {
    /// This node holds the lease, at this epoch.
    Held(i64),
    /// Another node serves it.
    Taken(LeaseRow),
}

/// The cluster's SQL.
#[derive(Clone)]
pub struct ClusterStore {
    pool: PgPool,
}

fn millis(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

/// Microseconds since the epoch of a `timestamptz` column.
macro_rules! micros {
    ($column:literal) => {
        concat!(
            "(EXTRACT(EPOCH FROM ",
            $column,
            ")::FLOAT8 * 1000000)::BIGINT"
        )
    };
}

const NODES: &str = concat!(
    "SELECT n.id, n.url, ",
    micros!("n.started_at"),
    " AS started_at, ",
    micros!("n.heartbeat_at"),
    " AS heartbeat_at, ",
    micros!("n.expires_at"),
    " AS expires_at, n.draining, n.revivals, (n.expires_at > clock_timestamp()) AS alive, \
     (EXTRACT(EPOCH FROM clock_timestamp() - n.started_at)::FLOAT8 * 1000)::BIGINT AS age_ms, \
     (SELECT COUNT(*) FROM workspace_leases l WHERE l.node_id = n.id) AS workspaces \
     FROM cluster_nodes n ORDER BY n.started_at, n.id"
);

/// Within the current transaction, waits at most `wait` for a row lock.
async fn lock_timeout(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    wait: Duration,
) -> StoreResult<()> {
    sqlx::query("SELECT set_config('lock_timeout', $1, TRUE)")
        .bind(millis(wait).max(1).to_string())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl ClusterStore {
    pub fn new(pool: PgPool) -> Self {
        ClusterStore { pool }
    }

    /// Adds this node, alive for `ttl`.
    pub async fn register(&self, id: Uuid, url: &str, ttl: Duration) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO cluster_nodes (id, url, started_at, heartbeat_at, expires_at) \
             VALUES ($1, $2, now(), now(), clock_timestamp() + $3 * INTERVAL '1 millisecond')",
        )
        .bind(id)
        .bind(url)
        .bind(millis(ttl))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Renews this node for `ttl`; `false` when it had already expired (it was declared dead,
    /// and its workspaces may have moved): the caller must revive it.
    pub async fn beat(&self, id: Uuid, ttl: Duration) -> StoreResult<bool> {
        let renewed = sqlx::query(
            "UPDATE cluster_nodes SET heartbeat_at = now(), \
             expires_at = clock_timestamp() + $2 * INTERVAL '1 millisecond' \
             WHERE id = $1 AND expires_at > clock_timestamp()",
        )
        .bind(id)
        .bind(millis(ttl))
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(renewed == 1)
    }

    /// Brings this node back after it was declared dead (or its row was removed), and returns
    /// the workspaces whose lease still names it (no one took them meanwhile).
    pub async fn revive(&self, id: Uuid, url: &str, ttl: Duration) -> StoreResult<Vec<Uuid>> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO cluster_nodes (id, url, started_at, heartbeat_at, expires_at) \
             VALUES ($1, $2, now(), now(), clock_timestamp() + $3 * INTERVAL '1 millisecond') \
             ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at, \
             expires_at = EXCLUDED.expires_at, revivals = cluster_nodes.revivals + 1",
        )
        .bind(id)
        .bind(url)
        .bind(millis(ttl))
        .execute(&mut *tx)
        .await?;
        let kept: Vec<(Uuid,)> =
            sqlx::query_as("SELECT workspace_id FROM workspace_leases WHERE node_id = $1")
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
        tx.commit().await?;
        Ok(kept.into_iter().map(|(w,)| w).collect())
    }

    /// Marks this node as shutting down: it takes no new workspaces.
    pub async fn drain(&self, id: Uuid) -> StoreResult<()> {
        sqlx::query("UPDATE cluster_nodes SET draining = TRUE WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Removes this node; leases still naming it are free to take at once.
    pub async fn leave(&self, id: Uuid) -> StoreResult<()> {
        sqlx::query("DELETE FROM cluster_nodes WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Forgets nodes dead for longer than `after` that no lease names.
    pub async fn forget_dead(&self, after: Duration) -> StoreResult<u64> {
        Ok(sqlx::query(
            "DELETE FROM cluster_nodes n WHERE n.expires_at < clock_timestamp() - \
             $1 * INTERVAL '1 millisecond' \
             AND NOT EXISTS (SELECT 1 FROM workspace_leases l WHERE l.node_id = n.id)",
        )
        .bind(millis(after))
        .execute(&self.pool)
        .await?
        .rows_affected())
    }

    /// Every registered node, with how many workspaces each owns.
    pub async fn nodes(&self) -> StoreResult<Vec<NodeRow>> {
        Ok(sqlx::query_as(NODES).fetch_all(&self.pool).await?)
    }

    /// The lease of `workspace`, if any node ever served it.
    pub async fn lease(&self, workspace: Uuid) -> StoreResult<Option<LeaseRow>> {
        Ok(sqlx::query_as(
            "SELECT l.workspace_id, l.node_id, l.epoch, n.url, \
             COALESCE(n.expires_at > clock_timestamp() AND NOT n.draining, FALSE) AS serving \
             FROM workspace_leases l LEFT JOIN cluster_nodes n ON n.id = l.node_id \
             WHERE l.workspace_id = $1",
        )
        .bind(workspace)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Takes `workspace` for `node` unless a serving node holds it. A takeover locks the lease
    /// row first, so it waits (at most `wait`) for writes in flight under the old owner.
    pub async fn acquire(
        &self,
        workspace: Uuid,
        node: Uuid,
        wait: Duration,
    ) -> StoreResult<Acquired> {
        let mut tx = self.pool.begin().await?;
        lock_timeout(&mut tx, wait).await?;
        let inserted: Option<(i64,)> = sqlx::query_as(
            "INSERT INTO workspace_leases (workspace_id, node_id, epoch, acquired_at) \
             SELECT $1, $2, 1, now() WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = $1) \
             ON CONFLICT (workspace_id) DO NOTHING RETURNING epoch",
        )
        .bind(workspace)
        .bind(node)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((epoch,)) = inserted {
            tx.commit().await?;
            return Ok(Acquired::Held(epoch));
        }
        // Lock the lease first, then read its owner's state in a statement of its own: a lock
        // that waited behind another takeover sees that takeover's owner, not the one before.
        let locked: Option<(Uuid,)> = sqlx::query_as(
            "SELECT node_id FROM workspace_leases WHERE workspace_id = $1 FOR UPDATE",
        )
        .bind(workspace)
        .fetch_optional(&mut *tx)
        .await?;
        let current: Option<LeaseRow> = match locked {
            None => None,
            Some(_) => {
                sqlx::query_as(
                    "SELECT l.workspace_id, l.node_id, l.epoch, n.url, \
                 COALESCE(n.expires_at > clock_timestamp() AND NOT n.draining, FALSE) AS serving \
                 FROM workspace_leases l LEFT JOIN cluster_nodes n ON n.id = l.node_id \
                 WHERE l.workspace_id = $1",
                )
                .bind(workspace)
                .fetch_optional(&mut *tx)
                .await?
            }
        };
        let Some(current) = current else {
            // No such workspace (the insert found none).
            return Err(StorageError::Corrupt(format!(
                "no workspace {workspace} to lease"
            )));
        };
        if current.node_id == node {
            tx.commit().await?;
            return Ok(Acquired::Held(current.epoch));
        }
        if current.serving {
            tx.commit().await?;
            return Ok(Acquired::Taken(current));
        }
        let (epoch,): (i64,) = sqlx::query_as(
            "UPDATE workspace_leases SET node_id = $2, epoch = epoch + 1, acquired_at = now() \
             WHERE workspace_id = $1 RETURNING epoch",
        )
        .bind(workspace)
        .bind(node)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Acquired::Held(epoch))
    }

    /// Gives `workspace` from `from` to `to` (which must be serving) at the next epoch; `None`
    /// when `from` no longer holds it or `to` cannot take it.
    pub async fn hand_over(
        &self,
        workspace: Uuid,
        from: Uuid,
        to: Uuid,
        wait: Duration,
    ) -> StoreResult<Option<i64>> {
        let mut tx = self.pool.begin().await?;
        lock_timeout(&mut tx, wait).await?;
        let held: Option<(i64,)> = sqlx::query_as(
            "SELECT epoch FROM workspace_leases WHERE workspace_id = $1 AND node_id = $2 \
             FOR UPDATE",
        )
        .bind(workspace)
        .bind(from)
        .fetch_optional(&mut *tx)
        .await?;
        if held.is_none() {
            return Ok(None);
        }
        let moved: Option<(i64,)> = sqlx::query_as(
            "UPDATE workspace_leases SET node_id = $2, epoch = epoch + 1, acquired_at = now() \
             WHERE workspace_id = $1 AND EXISTS (SELECT 1 FROM cluster_nodes n WHERE n.id = $2 \
             AND n.expires_at > clock_timestamp() AND NOT n.draining) RETURNING epoch",
        )
        .bind(workspace)
        .bind(to)
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(moved.map(|(epoch,)| epoch))
    }

    /// Up to `limit` workspaces whose lease names no serving node (its node died, left or is
    /// draining, or the lease was released): their unfinished work waits for a new owner.
    pub async fn orphans(&self, limit: i64) -> StoreResult<Vec<Uuid>> {
        let rows: Vec<(Uuid,)> = sqlx::query_as(
            "SELECT l.workspace_id FROM workspace_leases l \
             LEFT JOIN cluster_nodes n ON n.id = l.node_id \
             WHERE n.id IS NULL OR n.expires_at <= clock_timestamp() OR n.draining \
             ORDER BY l.workspace_id LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|(w,)| w).collect())
    }

    /// The workspaces whose lease names `node`, with their epochs.
    pub async fn leases_of(&self, node: Uuid) -> StoreResult<Vec<(Uuid, i64)>> {
        Ok(
            sqlx::query_as("SELECT workspace_id, epoch FROM workspace_leases WHERE node_id = $1")
                .bind(node)
                .fetch_all(&self.pool)
                .await?,
        )
    }

    /// Announces `payload` to every node listening (`listener`).
    pub async fn notify(&self, payload: &str) -> StoreResult<()> {
        sqlx::query("SELECT pg_notify('memvault_cluster', $1)")
            .bind(payload)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// A connection of its own that receives what `notify` announces.
    pub async fn listener(&self) -> StoreResult<sqlx::postgres::PgListener> {
        let mut listener = sqlx::postgres::PgListener::connect_with(&self.pool).await?;
        listener.listen("memvault_cluster").await?;
        Ok(listener)
    }

    /// Drops `node`'s lease of `workspace` (no one to hand it to): the next node asked takes it.
    pub async fn release(&self, workspace: Uuid, node: Uuid) -> StoreResult<bool> {
        Ok(sqlx::query(
            "UPDATE workspace_leases SET node_id = '00000000-0000-0000-0000-000000000000', \
             epoch = epoch + 1 WHERE workspace_id = $1 AND node_id = $2",
        )
        .bind(workspace)
        .bind(node)
        .execute(&self.pool)
        .await?
        .rows_affected()
            == 1)
    }
}

/// Gives a connection the settings that fence a node's writes: its id (read by
/// `memvault_fence`), and how long a transaction may sit idle holding a lease lock (a paused
/// node's open transaction must not hold a takeover up for longer than a lease).
pub async fn fence_connection(
    conn: &mut sqlx::PgConnection,
    node: Uuid,
    ttl: Duration,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "SELECT set_config('memvault.node', $1, FALSE), \
         set_config('idle_in_transaction_session_timeout', $2, FALSE)",
    )
    .bind(node.to_string())
    .bind(millis(ttl).max(1).to_string())
    .execute(conn)
    .await?;
    Ok(())
}
