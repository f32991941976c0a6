//! Integration tests of the scenario, workload, fault and sender modules,
//! against a real HTTP server on 127.0.0.1 that verifies signatures.

mod catalog;
mod sender;
mod support;
mod workload;
