//! hookstorm-cli: the `hookstorm` command line's library part.
//!
//! The binary (`main.rs` and its `commands`) parses arguments and maps
//! outcomes to exit codes; what it builds that tests also need lives here.
//!
//! # Layout
//! - [`builtin`]: the built-in reference receiver and the target that tests it.
#![warn(missing_docs)]

pub mod builtin;
