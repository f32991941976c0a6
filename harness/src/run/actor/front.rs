//! The fault front as a [`Fault`]: an HTTP proxy started before the first
//! attempt, which the sender addresses instead of the receiver; it answers
//! errors and redirects, holds and stalls requests, and says what it did.

use futures_util::future::BoxFuture;

use super::{Fault, Findings, Scene, SetupError};
use crate::fault::front::{self, FrontConfig, FrontCounts};
use crate::fault_spec::FrontSpec;
use crate::findings::note::Note;
use crate::plan::Plan;
use crate::sender::{SendConfig, SendSummary};
use crate::state::State;

/// The scenario's front, before, while and after it runs.
pub(super) struct Front {
    spec: FrontSpec,
    running: Option<front::Front>,
    counts: FrontCounts,
}

impl Front {
    /// The front, when the scenario asks for one.
    pub(super) fn cast(plan: &Plan) -> Option<Front> {
        plan.front().map(|spec| Front {
            spec: spec.clone(),
            running: None,
            counts: FrontCounts::default(),
        })
    }
}

impl Fault for Front {
    fn setup<'s>(
        &'s mut self,
        scene: &'s Scene<'s>,
        send: &'s mut SendConfig,
    ) -> BoxFuture<'s, Result<(), SetupError>> {
        Box::pin(async move {
            let f = front::Front::start(FrontConfig {
                scenario: scene.plan.scenario.clone(),
                spec: self.spec.clone(),
                seed: scene.plan.seed,
                target_url: scene.target.url.clone(),
                sink: Some(scene.sink.clone()),
            })
            .await?;
            let own = std::mem::replace(&mut send.url, f.url());
            send.signed_url.get_or_insert(own);
            send.front = Some(f.tags());
            self.running = Some(f);
            Ok(())
        })
    }

    fn teardown<'s>(
        &'s mut self,
        _scene: &'s Scene<'s>,
        _sent: Option<&'s mut SendSummary>,
        _send: &'s SendConfig,
    ) -> BoxFuture<'s, ()> {
        Box::pin(async move {
            if let Some(f) = self.running.take() {
                self.counts = f.stop().await;
            }
        })
    }

    fn findings(&mut self, _plan: &Plan, _state: Option<&State>) -> Findings {
        let did = self.counts != FrontCounts::default();
        Findings {
            notes: did
                .then_some(Note::Front(self.counts))
                .into_iter()
                .collect(),
            ..Findings::default()
        }
    }
}
