//! The process and database faults as one [`Fault`]: the nemesis kills,
//! pauses and restarts the receiver and its worker and cuts their database
//! while the sender delivers a steady stream, placed by the traffic it
//! watches; once the kills are over, events acknowledged before the last
//! restart are redelivered (and, under a provider that makes one attempt,
//! what the kills left dead), as a real provider sends them.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::sync::watch;

use super::{Fault, Findings, Scene, SetupError};
use crate::fault::gauge::TrafficGauge;
use crate::fault::nemesis::{self, Actions, KillFold};
use crate::findings::note::Note;
use crate::grading::excuse::Recovery;
use crate::history::Fold;
use crate::lifecycle::Supervisor;
use crate::plan::Plan;
use crate::sender::{self, SendConfig, SendSummary};
use crate::state::State;

/// The scenario's nemesis and what it did.
pub(super) struct Nemesis<'a> {
    sup: &'a mut Supervisor,
    gauge: Arc<TrafficGauge>,
    acts: Actions,
    kills: KillFold,
}

impl<'a> Nemesis<'a> {
    /// The nemesis, when the scenario has process or database faults.
    pub(super) fn cast(plan: &Plan, sup: &'a mut Supervisor) -> Option<Nemesis<'a>> {
        nemesis::applies(&plan.faults).then(|| Nemesis {
            sup,
            gauge: Arc::new(TrafficGauge::new()),
            acts: Actions::default(),
            kills: KillFold::default(),
        })
    }
}

impl Fault for Nemesis<'_> {
    fn setup<'s>(
        &'s mut self,
        scene: &'s Scene<'s>,
        send: &'s mut SendConfig,
    ) -> BoxFuture<'s, Result<(), SetupError>> {
        Box::pin(async move {
            self.sup.attach(
                Arc::new(scene.sink.clone()),
                &scene.plan.scenario,
                scene.dir,
            );
            if let Err(e) = nemesis::prepare(self.sup, scene.plan).await {
                self.acts.errors.push(e.to_string());
            }
            nemesis::prime(&scene.plan.faults, &self.gauge);
            send.gauge = Some(self.gauge.clone());
            Ok(())
        })
    }

    fn act<'s>(
        &'s mut self,
        scene: &'s Scene<'s>,
        done: watch::Receiver<bool>,
    ) -> BoxFuture<'s, ()> {
        Box::pin(async move {
            let acted = nemesis::nemesis(
                self.sup,
                nemesis::Stream::of(scene.plan),
                &self.gauge,
                scene.probe,
                done,
            )
            .await;
            self.acts.merge(acted);
        })
    }

    fn teardown<'s>(
        &'s mut self,
        scene: &'s Scene<'s>,
        sent: Option<&'s mut SendSummary>,
        send: &'s SendConfig,
    ) -> BoxFuture<'s, ()> {
        Box::pin(async move {
            if let Err(e) = nemesis::finish(self.sup, scene.plan).await {
                self.acts.errors.push(e.to_string());
            }
            if let Some(summary) = sent {
                let recovery = Recovery::of(&scene.target.profile);
                if let Some(again) = nemesis::redeliveries(
                    scene.plan,
                    &summary.acked,
                    &summary.died,
                    self.gauge.last_restart(),
                    recovery,
                ) {
                    let redo = SendConfig {
                        gauge: None,
                        spread: None,
                        first_round: 1,
                        ..send.clone()
                    };
                    let acked_before = again
                        .deliveries
                        .iter()
                        .filter(|d| summary.acked.iter().any(|(i, _)| *i == d.index))
                        .count();
                    match sender::send(&again, &redo, scene.sink).await {
                        Ok(more) => {
                            summary.merge(more);
                            self.acts.redelivered += acked_before;
                        }
                        Err(e) => self
                            .acts
                            .errors
                            .push(format!("redelivery after the kills: {e}")),
                    }
                }
            }
            self.sup.detach();
        })
    }

    fn fold(&mut self) -> Option<&mut dyn Fold> {
        Some(&mut self.kills)
    }

    fn findings(&mut self, plan: &Plan, state: Option<&State>) -> Findings {
        let tally = state.map(|s| std::mem::take(&mut self.kills).finish(s));
        let acts = &self.acts;
        Findings {
            not_exercised: nemesis::not_exercised(&plan.faults, acts, tally.as_ref()),
            observations: nemesis::observations(&plan.faults, acts, tally.as_ref()),
            notes: vec![Note::Process {
                actions: acts.clone(),
                tally,
            }],
        }
    }
}
