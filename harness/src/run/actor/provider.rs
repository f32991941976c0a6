//! The provider API's outage as a [`Fault`]: the scenario's tasks are
//! loaded into the harness's provider API before the first attempt (their
//! final states recorded in the history as ground truth), and once the
//! stream is over the receiver is asked to reconcile against it, the way a
//! scheduler would.

use futures_util::future::BoxFuture;

use super::{Fault, Findings, Scene, SetupError};
use crate::fault::reconcile::{self, Reconciliation};
use crate::findings::note::Note;
use crate::plan::Plan;
use crate::provider::book::TaskBook;
use crate::sender::{SendConfig, SendSummary};
use crate::state::State;
use crate::target::Target;

/// The outage a receiver recovers from by asking the provider.
pub(super) struct Outage {
    book: Option<TaskBook>,
    result: Option<Reconciliation>,
}

impl Outage {
    /// The outage, when the scenario reconciles and the target has a
    /// provider API.
    pub(super) fn cast(plan: &Plan, target: &Target) -> Option<Outage> {
        (plan.reconcile().is_some() && target.provider.is_some()).then_some(Outage {
            book: None,
            result: None,
        })
    }
}

impl Fault for Outage {
    fn setup<'s>(
        &'s mut self,
        scene: &'s Scene<'s>,
        _send: &'s mut SendConfig,
    ) -> BoxFuture<'s, Result<(), SetupError>> {
        Box::pin(async move {
            self.book =
                reconcile::load_provider(scene.plan, scene.target, scene.time_scale, scene.sink);
            Ok(())
        })
    }

    fn teardown<'s>(
        &'s mut self,
        scene: &'s Scene<'s>,
        _sent: Option<&'s mut SendSummary>,
        _send: &'s SendConfig,
    ) -> BoxFuture<'s, ()> {
        Box::pin(async move {
            if let Some(book) = &self.book {
                self.result = Some(reconcile::reconcile(scene.probe, book, scene.sink).await);
            }
        })
    }

    fn ground_truth(&self) -> bool {
        self.book.is_some()
    }

    fn findings(&mut self, _plan: &Plan, _state: Option<&State>) -> Findings {
        Findings {
            notes: self
                .result
                .take()
                .map(Note::Reconciled)
                .into_iter()
                .collect(),
            ..Findings::default()
        }
    }
}
