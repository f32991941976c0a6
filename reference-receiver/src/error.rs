//! Errors of the receiver library: one for the store, one for everything else.
//!
//! `StoreError::Unavailable` is kept apart from other store failures because
//! the handler must map it to 503 (the sender retries), while anything else
//! is a bug worth a 500.

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached right now (connection refused, lost, timed out).
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// The database answered with an error.
    #[error("database error: {0}")]
    Database(String),
    /// The store URL is not one this receiver understands.
    #[error("unsupported store url {0:?} (hint: use sqlite:///abs/path.db, sqlite://relative.db or postgres://...)")]
    BadUrl(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match &e {
            rusqlite::Error::SqliteFailure(f, _)
                if matches!(
                    f.code,
                    rusqlite::ErrorCode::CannotOpen
                        | rusqlite::ErrorCode::DatabaseBusy
                        | rusqlite::ErrorCode::DatabaseLocked
                        | rusqlite::ErrorCode::SystemIoFailure
                        | rusqlite::ErrorCode::DiskFull
                ) =>
            {
                StoreError::Unavailable(e.to_string())
            }
            _ => StoreError::Database(e.to_string()),
        }
    }
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        let transient = e.as_db_error().is_some_and(|db| {
            // 08: connection exception, 53: insufficient resources,
            // 57: operator intervention (shutdown, crash of another backend).
            let code = db.code().code();
            code.starts_with("08") || code.starts_with("53") || code.starts_with("57")
        });
        if e.is_closed() || e.as_db_error().is_none() || transient {
            // No server-side error code, or one saying the server is going
            // away: the connection failed or was lost.
            StoreError::Unavailable(e.to_string())
        } else {
            StoreError::Database(e.to_string())
        }
    }
}

/// Any failure of the receiver library outside a single request.
#[derive(Debug, thiserror::Error)]
pub enum ReceiverError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A listener could not be bound or served.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The configuration is unusable.
    #[error("invalid configuration: {0}")]
    Config(String),
}
