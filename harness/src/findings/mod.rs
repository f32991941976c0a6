//! What a run found beside its verdicts: what scenarios need, why one was
//! skipped and what ran ([`coverage`]), and the typed notes reporters word
//! ([`note`]). After the check, before the report.

pub mod coverage;
pub mod note;
