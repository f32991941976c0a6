//! How the harness writes and reads numbers, durations, counts and names:
//! human durations and sizes ([`units`]), counts in words with plural
//! agreement ([`words`]), "did you mean …?" for a mistyped name
//! ([`suggest`]) and decimal digits without an allocation (`decimal`).
//! Leaves: one way of saying each thing, for every stage.

pub(crate) mod decimal;
pub mod suggest;
pub mod units;
pub mod words;
