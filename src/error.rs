//! The one error type of the services. `http::error` maps it to responses; nothing here knows
//! about HTTP beyond the variant names.

use memvault_actors::{RateStatus, WorkspacesError};

/// A storage failure. Never shown to clients (it becomes a 500 with an `errorId`).
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("stored data is invalid: {0}")]
    Corrupt(String),
    /// The data directory could not be created.
    #[error("cannot create the data directory: {0}")]
    DataDir(String),
    /// The store was shut down (the group-commit task is gone).
    #[error("the store is shut down")]
    Closed,
    /// A unique index refused a write (a concurrent duplicate, or an edit that would make one).
    #[error("unique constraint violated")]
    UniqueViolation,
}

impl StorageError {
    /// A write refused by the cluster's fence (SQLSTATE `MV001`, raised by `memvault_fence`):
    /// this node no longer holds the workspace's lease; or a transaction that this node left
    /// idle past the lease (it was paused) and PostgreSQL ended (`25P03`). Nothing was written
    /// either way.
    pub fn is_fenced(&self) -> bool {
        match self {
            StorageError::Database(sqlx::Error::Database(db)) => {
                matches!(db.code().as_deref(), Some("MV001" | "25P03"))
            }
            _ => false,
        }
    }

    /// Classifies a database error; unique violations become [`StorageError::UniqueViolation`].
    pub fn from_db(error: sqlx::Error) -> Self {
        match &error {
            sqlx::Error::Database(db) if db.is_unique_violation() => StorageError::UniqueViolation,
            _ => StorageError::Database(error),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 400; the message names the field.
    #[error("invalid {field}: {message}")]
    Validation { field: String, message: String },
    /// 400, for a body or query that could not be read at all.
    #[error("{0}")]
    BadRequest(String),
    /// 401
    #[error("{0}")]
    Unauthorized(String),
    /// 403 for a role or workspace the caller may not use.
    #[error("{0}")]
    Forbidden(String),
    /// 403 when the plan's memory limit is reached.
    #[error("memory limit reached: this workspace's plan allows {limit} memories; delete memories or change plan")]
    MemoryLimit { limit: u64 },
    /// 404
    #[error("{0}")]
    NotFound(String),
    /// 405
    #[error("method not allowed")]
    MethodNotAllowed,
    /// 409
    #[error("{0}")]
    Conflict(String),
    /// 410: something that existed is no longer usable (a used, revoked or expired
    /// invitation).
    #[error("{0}")]
    Gone(String),
    /// 413
    #[error("request body too large")]
    PayloadTooLarge,
    /// 408: the body did not arrive in time (`http.body_timeout_secs`).
    #[error("the request body did not arrive in time (setting http.body_timeout_secs, or http.upload_timeout_secs for uploads)")]
    BodyTimeout,
    /// 415
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 429
    #[error("rate limit exceeded: {} requests per minute; retry after the window resets", rate.limit)]
    RateLimited { rate: RateStatus },
    /// 429: one of the abuse limits (sign-ups, sign-ins, workspaces, registrations,
    /// invitations); the message names its setting.
    #[error("{message}")]
    Throttled { message: String, retry_after: u64 },
    /// 503 with `Retry-After`: a shared resource (password hashing, upload slots) is busy.
    #[error("{message}")]
    Busy { message: String, retry_after: u64 },
    /// 502: a service we depend on (the billing provider) failed. Details are logged, not
    /// shown.
    #[error("upstream service failed: {0}")]
    Upstream(String),
    /// 503: a workspace actor did not answer in time. Details are logged, not shown.
    #[error("workspace service unavailable: {0}")]
    Unavailable(String),
    /// 500. Details are logged, not shown.
    #[error(transparent)]
    Storage(StorageError),
    /// 500. Details are logged, not shown.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub fn validation(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Validation {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The HTTP status this error answers with (the MCP adapter reports it too).
    pub fn status(&self) -> u16 {
        match self {
            Error::Validation { .. } | Error::BadRequest(_) => 400,
            Error::Unauthorized(_) => 401,
            Error::Forbidden(_) | Error::MemoryLimit { .. } => 403,
            Error::NotFound(_) => 404,
            Error::MethodNotAllowed => 405,
            Error::Conflict(_) => 409,
            Error::Gone(_) => 410,
            Error::PayloadTooLarge => 413,
            Error::BodyTimeout => 408,
            Error::UnsupportedMediaType(_) => 415,
            Error::RateLimited { .. } | Error::Throttled { .. } => 429,
            Error::Storage(_) | Error::Internal(_) => 500,
            Error::Upstream(_) => 502,
            Error::Unavailable(_) | Error::Busy { .. } => 503,
        }
    }

    /// What a client may read: the message itself for client errors; for server errors a
    /// fixed sentence (the details go to the log only).
    pub fn public_message(&self) -> String {
        match self {
            Error::Upstream(_) => {
                "an upstream service (the billing provider) failed; retry shortly".to_string()
            }
            Error::Unavailable(_) => {
                "the service is temporarily unavailable; retry shortly".to_string()
            }
            Error::Storage(_) | Error::Internal(_) => "internal server error".to_string(),
            Error::Validation { .. }
            | Error::BadRequest(_)
            | Error::Unauthorized(_)
            | Error::Forbidden(_)
            | Error::MemoryLimit { .. }
            | Error::NotFound(_)
            | Error::MethodNotAllowed
            | Error::Conflict(_)
            | Error::Gone(_)
            | Error::PayloadTooLarge
            | Error::BodyTimeout
            | Error::UnsupportedMediaType(_)
            | Error::RateLimited { .. }
            | Error::Throttled { .. }
            | Error::Busy { .. } => self.to_string(),
        }
    }

    /// Seconds a client should wait before trying again, for errors that say so.
    pub fn retry_after(&self, now_secs: i64) -> Option<u64> {
        match self {
            Error::RateLimited { rate } => Some(rate.retry_after(now_secs)),
            Error::Throttled { retry_after, .. } | Error::Busy { retry_after, .. } => {
                Some((*retry_after).max(1))
            }
            _ => None,
        }
    }

    /// The machine-readable code of the contract: `HTTP_<status>`, or `INTERNAL_ERROR`.
    pub fn code(&self) -> String {
        code_for_status(self.status())
    }

    pub fn memory_not_found() -> Self {
        Error::NotFound("memory not found".to_string())
    }
}

impl From<StorageError> for Error {
    fn from(error: StorageError) -> Self {
        if error.is_fenced() {
            return Error::Busy {
                message: "the workspace is moving to another node; retry".to_string(),
                retry_after: 1,
            };
        }
        match error {
            StorageError::UniqueViolation => Error::Conflict(
                "a current memory with the same content already exists in this scope and project"
                    .to_string(),
            ),
            StorageError::Database(_)
            | StorageError::Migrate(_)
            | StorageError::Corrupt(_)
            | StorageError::DataDir(_)
            | StorageError::Closed => Error::Storage(error),
        }
    }
}

impl From<WorkspacesError> for Error {
    fn from(error: WorkspacesError) -> Self {
        match error {
            // A key pointing at a missing workspace: the key is no longer valid.
            WorkspacesError::UnknownWorkspace(_) => {
                Error::Unauthorized("invalid API key".to_string())
            }
            WorkspacesError::Timeout => Error::Unavailable(error.to_string()),
            WorkspacesError::Unavailable(_) => Error::Unavailable(error.to_string()),
        }
    }
}

/// `HTTP_<status>`, or `INTERNAL_ERROR` for 500.
pub fn code_for_status(status: u16) -> String {
    if status == 500 {
        "INTERNAL_ERROR".to_string()
    } else {
        format!("HTTP_{status}")
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
