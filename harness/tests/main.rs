//! Integration tests of the hookstorm library, in one test binary: the
//! scenario, workload, fault and sender modules against a real HTTP server on
//! 127.0.0.1 that verifies signatures; the checker, the state probes and the
//! reports.

mod catalog;
mod checker;
mod sender;
mod support;
mod workload;
