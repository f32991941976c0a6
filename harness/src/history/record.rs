//! The attempt record, defined once: [`attempt_fields!`] lists every field
//! of an attempt line with its documentation, its serde attributes and its
//! kind, in the order the writers put them. Each form of an attempt is
//! generated from that list: the owned [`super::Attempt`] that serde writes
//! and reads, the scanner's borrowed line ([`super::scan::RawLine`], its
//! field table and its reader of each value), the checker's view
//! (`check::aggregate::AttemptView`) and the two ways into it (from an
//! `Attempt`, from a scanned line). A new field is one line here plus its
//! use; a test writes an attempt with every field set and reads it back
//! through each form.
//!
//! The kinds say what a field is to each form:
//!
//! | kind | in `Attempt` | scanned | the checker sees |
//! |---|---|---|---|
//! | `text` | `String` | `Option<Cow<str>>` | `&str` (missing: an error) |
//! | `stamp` | `String` | `Option<Cow<str>>` | `Option<&str>` (not needed) |
//! | `opt_text` | `Option<String>` | `Option<Cow<str>>` | `Option<&str>` |
//! | `req T` | `T` | `Option<T>` | `T` (missing: an error) |
//! | `dflt T` | `T` | `T` (absent: default) | `T` |
//! | `opt T` | `Option<T>` | `Option<T>` | `Option<T>` |
//! | `tags` | `Vec<FaultTag>` | `Vec<Cow<str>>` | `TagFacts` |
//!
//! The checker's forms are generated in `check::aggregate` from the same
//! list (this module is a leaf of the history and knows nothing of the
//! checker). The spill record of a partitioned check keeps, on purpose,
//! only what the key's record folds, in a hand-tuned binary form; its
//! writer takes the checker's view apart field by field with no `..`, so
//! a new field does not compile until the spill has decided whether it
//! keeps it.

/// Calls `$then!` with the attempt's fields, `/// doc`, at most one
/// `#[serde(…)]`, then `name: kind [T],`, in the order the writers put
/// them (the scanner's fast path expects that order). `type` (the line's tag) and `sink` (a sink's nested record,
/// which the checker never reads) are not listed; the forms add them.
macro_rules! attempt_fields {
    ($then:ident) => {
        $then! {
            /// The scenario it belongs to.
            scenario: text,
            /// The delivery id (`Webhook-Id`), stable across retries and redeliveries.
            delivery: text,
            /// The deduplication key (task id).
            key: text,
            /// The job key, when the task has an idempotency key.
            #[serde(default)]
            job: opt_text,
            /// The account the delivery was sent for.
            account: text,
            /// 1-based attempt number within its round.
            attempt: req u32,
            /// 0 for the automatic delivery, 1.. for manual redeliveries.
            #[serde(default)]
            round: dflt u32,
            /// Faults applied to this attempt.
            #[serde(default)]
            faults: tags,
            /// When it was sent (RFC 3339, wall clock).
            sent_at: stamp,
            /// The answer's status, if one came.
            #[serde(default)]
            status: opt u16,
            /// Time to the answer's head, in milliseconds.
            #[serde(default)]
            latency_ms: opt f64,
            /// Transport error text (timeout, reset, refused).
            #[serde(default)]
            error: opt_text,
            /// The outcome.
            outcome: req Outcome,
            /// What the delivery was meant to be.
            intent: req Intent,
            /// More about the intent (the forgery kind, …).
            #[serde(default)]
            detail: opt_text,
            /// The task's final status.
            #[serde(default)]
            task_status: opt TaskStatus,
            /// The task's createdAt.
            #[serde(default)]
            created_at: opt_text,
            /// Sequenced workload: the resource.
            #[serde(default)]
            resource: opt_text,
            /// Sequenced workload: the sequence number.
            #[serde(default)]
            sequence: opt u64,
            /// The delivery is a poison event.
            #[serde(default)]
            poison: dflt bool,
            /// This was the last attempt and it failed: the delivery is dead.
            #[serde(default)]
            dead: dflt bool,
        }
    };
}
pub(crate) use attempt_fields;

/// A field's type in [`super::Attempt`], from its kind.
macro_rules! owned_type {
    (text) => { String };
    (stamp) => { String };
    (opt_text) => { Option<String> };
    (req $t:ty) => { $t };
    (dflt $t:ty) => { $t };
    (opt $t:ty) => { Option<$t> };
    (tags) => { Vec<$crate::tag::FaultTag> };
}
pub(crate) use owned_type;
