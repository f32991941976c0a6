//! Why shrinking could not be carried out: the error of every stage of
//! `hookstorm shrink` (the search, the runs, the outputs).

use std::path::PathBuf;

use crate::run::RunError;

/// Why shrinking could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum ShrinkError {
    /// A run could not be carried out (target unusable, reports not written).
    #[error(transparent)]
    Run(#[from] RunError),
    /// Stopped by Ctrl-C or SIGTERM.
    #[error("interrupted")]
    Interrupted,
    /// An output could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
