//! A state held whole, within its budget.
//!
//! Every row of a state is capped ([`crate::limits::budget::STATE_ROW`]),
//! but a receiver can answer any number of small rows: a run that keeps
//! them all (its [`State`], for the checker, the late rows and the settle
//! wait) would hold whatever the receiver sends. [`Held`] collects the
//! rows like [`State`] does and counts what they cost once held (each
//! row's own size and its strings' bytes, with the allocator's share);
//! past [`crate::limits::budget::STATE_HELD`] it refuses the state, naming
//! the budget and how many rows it took, and the read stops there. A state
//! refused that way is the receiver's answer to fix (the run's verdict is
//! unknown), never a buffer that grows with the answer.

use super::row::{Row, Section, SinkError, StateSink};
use crate::limits::budget;
use crate::state::State;

/// What a heap string costs once held: its bytes and the allocator's
/// header (none for an empty one).
fn text(s: &str) -> usize {
    if s.is_empty() {
        0
    } else {
        s.len() + 16
    }
}

fn opt(s: &Option<String>) -> usize {
    s.as_deref().map_or(0, text)
}

impl Row {
    /// What the row costs in a [`State`]: its place in its section's list
    /// and the strings it owns.
    pub fn held_bytes(&self) -> usize {
        use std::mem::size_of_val;
        match self {
            Row::Inbox(r) => size_of_val(r) + text(&r.key) + opt(&r.account) + opt(&r.error),
            Row::Results(r) => {
                size_of_val(r)
                    + text(&r.task_id)
                    + opt(&r.job_key)
                    + text(&r.status)
                    + opt(&r.created_at)
                    + opt(&r.account)
            }
            Row::Winners(r) => {
                size_of_val(r) + text(&r.job_key) + text(&r.task_id) + opt(&r.account)
            }
            Row::Effects(r) => size_of_val(r) + text(&r.key) + opt(&r.account),
            Row::Resources(r) => size_of_val(r) + text(&r.resource) + opt(&r.account),
        }
    }
}

/// Collects a whole [`State`], refusing it past `cap` bytes as held.
#[derive(Debug)]
pub struct Held {
    state: State,
    bytes: usize,
    rows: u64,
    cap: usize,
}

impl Default for Held {
    fn default() -> Self {
        Held::with_cap(budget::STATE_HELD)
    }
}

impl Held {
    /// A state held within `cap` bytes (the budget is
    /// [`budget::STATE_HELD`]; tests use smaller caps).
    pub fn with_cap(cap: usize) -> Self {
        Held {
            state: State::default(),
            bytes: 0,
            rows: 0,
            cap,
        }
    }

    /// The state collected.
    pub fn into_state(self) -> State {
        self.state
    }
}

impl StateSink for Held {
    fn section(&mut self, s: Section) -> Result<(), SinkError> {
        self.state.section(s)
    }

    fn row(&mut self, row: Row) -> Result<(), SinkError> {
        self.bytes = self.bytes.saturating_add(row.held_bytes());
        self.rows += 1;
        if self.bytes > self.cap {
            return Err(over_budget(self.cap, self.rows, row.section()));
        }
        self.state.row(row)
    }
}

/// The refusal of a state whose rows passed `cap` once held at row `rows`
/// (1-based) of `section`.
fn over_budget(cap: usize, rows: u64, section: Section) -> SinkError {
    SinkError::Refused(format!(
        "the state's rows take more than {} once held (row {rows} of the state, in `{}`): \
         a state graded whole is held within this budget \
         (hint: a state this large is not the run's; see docs/budgets.md)",
        budget::show(cap),
        section.name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::stream::{read_document, read_lines};

    /// `n` inbox rows as the document form.
    fn rows(n: usize) -> String {
        let row = r#"{"key":"tsk_0123456789","processed":true}"#;
        format!("{{\"inbox\":[{}]}}", vec![row; n].join(","))
    }

    #[test]
    fn a_state_within_its_budget_is_held_whole() {
        let held = read_document(rows(100).as_bytes(), Held::default()).unwrap();
        let state = held.into_state();
        assert_eq!(state.inbox.len(), 100);
        assert_eq!(
            state,
            read_document(rows(100).as_bytes(), State::default()).unwrap()
        );
    }

    #[test]
    fn rows_past_the_held_budget_refuse_the_state_naming_the_budget_and_the_row() {
        let one = Row::Inbox(crate::state::InboxRow {
            key: "tsk_0123456789".into(),
            account: None,
            processed: true,
            error: None,
        })
        .held_bytes();
        let cap = one * 10;
        let e = read_document(rows(11).as_bytes(), Held::with_cap(cap))
            .unwrap_err()
            .to_string();
        assert!(e.contains("inbox[10]"), "{e}");
        assert!(e.contains("row 11 of the state"), "{e}");
        assert!(e.contains(&budget::show(cap)), "{e}");
        assert!(read_document(rows(10).as_bytes(), Held::with_cap(cap)).is_ok());
        let lines = format!(
            "{{\"sections\":[\"inbox\"]}}\n{}",
            "{\"inbox\":{\"key\":\"tsk_0123456789\",\"processed\":true}}\n".repeat(11)
        );
        let e = read_lines(lines.as_bytes(), Held::with_cap(cap))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 12") && e.contains("once held"), "{e}");
    }
}
