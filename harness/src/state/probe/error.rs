//! Why a probe could not be built or could not read the state: the one
//! error of every source (HTTP, SQL, command).

use std::time::Duration;

/// A probe could not be built or could not read the state.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The probe configuration is wrong.
    #[error("state probe: {0}")]
    Config(String),
    /// The action is not configured for this probe.
    #[error("state probe: no {0} action configured (hint: set `{0} = URL or command` in [state])")]
    NotConfigured(&'static str),
    /// A network or process failure.
    #[error("state probe: {0}")]
    Io(String),
    /// The call took longer than the probe's timeout.
    #[error("state probe: {what} took longer than {limit:?}")]
    Timeout {
        /// What timed out.
        what: String,
        /// The limit.
        limit: Duration,
    },
    /// The source answered, but not with what was expected.
    #[error("state probe: {0}")]
    Invalid(String),
    /// The source answered the state's JSON, but a value in it is not what
    /// the state holds there: the state's shape is wrong, not the source.
    #[error("state probe: {what}: the state's shape is wrong at {at}: {message}")]
    Shape {
        /// The source (`GET URL`, `command …`), redacted.
        what: String,
        /// The JSON path of the value (`inbox[0].key`).
        at: String,
        /// What is wrong with it.
        message: String,
    },
    /// An HTTP source or action answered with a non-2xx status.
    #[error("state probe: {message}")]
    Status {
        /// The status.
        status: u16,
        /// The method, URL (redacted), status and the start of the answer.
        message: String,
    },
    /// A SQL error.
    #[error("state probe: sql: {0}")]
    Sql(String),
    /// The harness could not keep the state it read (writing `state.json`
    /// or a spill failed): its own failure, not the receiver's.
    #[error("state probe: {0}")]
    Keep(String),
}

impl From<crate::state::stream::SinkError> for ProbeError {
    fn from(e: crate::state::stream::SinkError) -> Self {
        match e {
            crate::state::stream::SinkError::Refused(why) => ProbeError::Invalid(why),
            keep => ProbeError::Keep(keep.to_string()),
        }
    }
}
