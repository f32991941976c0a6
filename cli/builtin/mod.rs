//! The built-in target: the reference receiver that `hookstorm run` tests
//! when no target is given, and the [`Target`](hookstorm::target::Target)
//! that describes it to the harness.
//!
//! The receiver is the system under test and knows nothing of the
//! harness's configuration; wiring it up is the CLI's job, done here: its
//! accounts and fresh secrets, the harness's provider API it reconciles
//! against, its admin API as the state probe, and, for a child process,
//! the lifecycle that starts, kills and restarts it.
//!
//! - [`child`]: the receiver as a supervised child process (`hookstorm run`).
//! - [`embedded`]: the receiver in this process (`hookstorm bench`, tests).
//! - [`sender`]: the reference *sender* as a supervised child process
//!   (`hookstorm sink`).

mod accounts;
pub mod child;
pub mod embedded;
pub mod sender;

pub use accounts::{BuiltinError, ACCOUNTS};
pub use child::{prepare, ChildOptions, ChildTarget};
pub use embedded::{start, Embedded};
pub use sender::{prepare_sender, SenderChild};
