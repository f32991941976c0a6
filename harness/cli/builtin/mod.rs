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

use std::collections::BTreeMap;

use hookstorm::profile::signature::Secret;
use hookstorm_receiver::config::random_token;

pub mod child;
pub mod embedded;

pub use child::{prepare, ChildOptions, ChildTarget};
pub use embedded::{start, Embedded};

/// The accounts the built-in receiver serves.
pub const ACCOUNTS: [&str; 2] = ["acct_a", "acct_b"];

/// The built-in receiver could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum BuiltinError {
    /// The receiver could not start (its store, its listeners).
    #[error("the built-in reference receiver: {0}")]
    Receiver(#[from] hookstorm_receiver::ReceiverError),
    /// A socket or temporary folder could not be made.
    #[error("the built-in reference receiver: {0}")]
    Io(#[from] std::io::Error),
}

fn secret() -> Secret {
    Secret::new(format!("whsec_{}", random_token()))
}

/// Fresh random secrets for [`ACCOUNTS`]: `acct_a` mid-rotation (two valid
/// secrets, plus a retired one it no longer accepts), `acct_b` with one.
fn fresh_secrets() -> (BTreeMap<String, Vec<Secret>>, BTreeMap<String, Secret>) {
    let mut secrets = BTreeMap::new();
    secrets.insert(ACCOUNTS[0].to_string(), vec![secret(), secret()]);
    secrets.insert(ACCOUNTS[1].to_string(), vec![secret()]);
    let mut retired = BTreeMap::new();
    retired.insert(ACCOUNTS[0].to_string(), secret());
    (secrets, retired)
}
