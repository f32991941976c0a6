//! Run-time faults behind one trait, Jepsen's nemesis: each is set up
//! before the first attempt, acts while the sender works, is torn down
//! once the stream is over, and then says what it did as typed [`Note`]s.
//!
//! [`cast`] reads the scenario's plan and returns its run-time faults (the
//! fault front, the provider API's outage and reconciliation, the process
//! and database faults); [`send`] runs the sender with all of them. The
//! run composes them without naming any: what a fault needs from the run
//! is in the [`Scene`], what it changes of the send is its
//! [`SendConfig`], and what it measured from the history is its [`Fold`].
//! Set-up runs in the order of [`cast`], tear-down in reverse, as a stack:
//! the process faults are over before the front stops, and the front is
//! gone before the receiver is asked to reconcile.
//!
//! The faults themselves are in [`crate::fault`]; this composition lives in
//! the run because it calls the sender and words [`Note`]s, both stages
//! after the faults.
//!
//! Plan-time faults (duplicate, reorder, drop-ack, tamper) are not here:
//! they rewrote the plan before anything was sent ([`crate::fault::apply`]).

mod front;
mod process;
mod provider;

use std::path::Path;

use futures_util::future::BoxFuture;
use tokio::sync::watch;

use crate::fault::front::FrontError;
use crate::findings::note::Note;
use crate::history::{Fold, HistorySink};
use crate::lifecycle::Supervisor;
use crate::plan::Plan;
use crate::sender::{self, SendConfig, SendError, SendSummary};
use crate::state::probe::Probe;
use crate::state::State;
use crate::target::Target;

/// What every run-time fault may use of the scenario's run.
pub struct Scene<'a> {
    /// The scenario's plan (its faults, deliveries and seed).
    pub plan: &'a Plan,
    /// The target under test.
    pub target: &'a Target,
    /// The receiver's state (setup and reconcile hooks).
    pub probe: &'a Probe,
    /// The scenario's history.
    pub sink: &'a HistorySink,
    /// Real time is divided by this.
    pub time_scale: f64,
    /// The scenario's folder (process logs).
    pub dir: &'a Path,
}

/// A fault that could not be set up: the scenario cannot run.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The fault front did not start.
    #[error(transparent)]
    Front(#[from] FrontError),
}

/// What a fault found, once the scenario's state was read.
#[derive(Debug, Default)]
pub struct Findings {
    /// What it did, for the report.
    pub notes: Vec<Note>,
    /// Why it met nothing of the receiver, if it did not: the scenario's
    /// passes then become unknown.
    pub not_exercised: Option<String>,
    /// What it showed that is no failure.
    pub observations: Vec<String>,
}

impl Findings {
    /// Adds another fault's findings.
    fn merge(&mut self, other: Findings) {
        self.notes.extend(other.notes);
        self.not_exercised = match (self.not_exercised.take(), other.not_exercised) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        self.observations.extend(other.observations);
    }
}

/// One run-time fault of a scenario.
pub trait Fault: Send {
    /// Before the first attempt: starts what the fault needs and shapes the
    /// send (routes it through a front, watches its traffic).
    fn setup<'s>(
        &'s mut self,
        scene: &'s Scene<'s>,
        send: &'s mut SendConfig,
    ) -> BoxFuture<'s, Result<(), SetupError>>;

    /// While the sender works, until `done` turns true.
    fn act<'s>(
        &'s mut self,
        _scene: &'s Scene<'s>,
        _done: watch::Receiver<bool>,
    ) -> BoxFuture<'s, ()> {
        Box::pin(async {})
    }

    /// Once the stream is over: undoes what the fault did and sends what it
    /// sends after it (`sent` is `None` when the send failed).
    fn teardown<'s>(
        &'s mut self,
        scene: &'s Scene<'s>,
        sent: Option<&'s mut SendSummary>,
        send: &'s SendConfig,
    ) -> BoxFuture<'s, ()>;

    /// The fault put the scenario's final tasks into the provider API: the
    /// checker judges the state against that ground truth too.
    fn ground_truth(&self) -> bool {
        false
    }

    /// What it measures from the scenario's history, streamed once.
    fn fold(&mut self) -> Option<&mut dyn Fold> {
        None
    }

    /// What it did, against the scenario's state (`None` when unreadable).
    fn findings(&mut self, plan: &Plan, state: Option<&State>) -> Findings;
}

/// The scenario's run-time faults, in set-up order. The process and
/// database faults need the supervisor; without one they are not cast
/// (the preflight skipped such a scenario already).
pub fn cast<'a>(
    plan: &Plan,
    target: &Target,
    supervisor: Option<&'a mut Supervisor>,
) -> Vec<Box<dyn Fault + 'a>> {
    let mut faults: Vec<Box<dyn Fault + 'a>> = Vec::new();
    if let Some(p) = provider::Outage::cast(plan, target) {
        faults.push(Box::new(p));
    }
    if let Some(f) = front::Front::cast(plan) {
        faults.push(Box::new(f));
    }
    if let Some(sup) = supervisor {
        if let Some(n) = process::Nemesis::cast(plan, sup) {
            faults.push(Box::new(n));
        }
    }
    faults
}

/// Sets up every fault, sends the plan while they act, and tears them down
/// in reverse; a fault that cannot be set up stops the scenario.
pub async fn send(
    faults: &mut [Box<dyn Fault + '_>],
    scene: &Scene<'_>,
    mut cfg: SendConfig,
) -> Result<Result<SendSummary, SendError>, SetupError> {
    for f in faults.iter_mut() {
        f.setup(scene, &mut cfg).await?;
    }
    let (done_tx, done_rx) = watch::channel(false);
    let stream = async {
        let r = sender::send(scene.plan, &cfg, scene.sink).await;
        let _ = done_tx.send(true);
        r
    };
    let acting =
        futures_util::future::join_all(faults.iter_mut().map(|f| f.act(scene, done_rx.clone())));
    let (mut sent, _) = tokio::join!(stream, acting);
    for f in faults.iter_mut().rev() {
        f.teardown(scene, sent.as_mut().ok(), &cfg).await;
    }
    Ok(sent)
}

/// Every fault's findings, in set-up order.
pub fn findings(
    faults: &mut [Box<dyn Fault + '_>],
    plan: &Plan,
    state: Option<&State>,
) -> Findings {
    let mut all = Findings::default();
    for f in faults.iter_mut() {
        all.merge(f.findings(plan, state));
    }
    all
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A fault that writes down when each of its steps runs.
    struct Logged {
        name: &'static str,
        log: Arc<Mutex<Vec<String>>>,
    }

    impl Logged {
        fn say(&self, what: impl std::fmt::Display) {
            self.log
                .lock()
                .unwrap()
                .push(format!("{} {what}", self.name));
        }
    }

    impl Fault for Logged {
        fn setup<'s>(
            &'s mut self,
            _scene: &'s Scene<'s>,
            send: &'s mut SendConfig,
        ) -> BoxFuture<'s, Result<(), SetupError>> {
            Box::pin(async move {
                send.concurrency += 1;
                self.say("setup");
                Ok(())
            })
        }

        fn act<'s>(
            &'s mut self,
            _scene: &'s Scene<'s>,
            mut done: watch::Receiver<bool>,
        ) -> BoxFuture<'s, ()> {
            Box::pin(async move {
                let _ = done.wait_for(|d| *d).await;
                self.say("acted until the stream ended");
            })
        }

        fn teardown<'s>(
            &'s mut self,
            _scene: &'s Scene<'s>,
            sent: Option<&'s mut SendSummary>,
            send: &'s SendConfig,
        ) -> BoxFuture<'s, ()> {
            Box::pin(async move {
                self.say(format!(
                    "teardown (sent {}, concurrency {})",
                    sent.is_some(),
                    send.concurrency
                ));
            })
        }

        fn findings(&mut self, _plan: &Plan, _state: Option<&State>) -> Findings {
            Findings {
                notes: vec![Note::Informational(self.name.into())],
                not_exercised: Some(format!("{} met nothing", self.name)),
                observations: Vec::new(),
            }
        }
    }

    #[tokio::test]
    async fn faults_are_set_up_in_order_act_through_the_send_and_are_torn_down_in_reverse() {
        let dir = tempfile::tempdir().unwrap();
        let text = "url = \"http://127.0.0.1:1/w\"\n[accounts.acct_a]\nsecrets = [\"s\"]\n[state]\nhttp = \"http://127.0.0.1:2/state\"\n";
        let file = crate::error::parse_toml(Path::new("t.toml"), text).unwrap();
        let target = Target::resolve(file, Path::new("t.toml")).unwrap();
        let probe = Probe::http("http://127.0.0.1:2/state", None);
        let sink = HistorySink::create(&dir.path().join("history.jsonl")).unwrap();
        let plan = Plan {
            scenario: "s".into(),
            seed: 1,
            accounts: Vec::new(),
            faults: Vec::new(),
            deliveries: Vec::new(),
            notes: Vec::new(),
        };
        let scene = Scene {
            plan: &plan,
            target: &target,
            probe: &probe,
            sink: &sink,
            time_scale: 1.0,
            dir: dir.path(),
        };
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut faults: Vec<Box<dyn Fault>> = ["a", "b"]
            .into_iter()
            .map(|name| {
                Box::new(Logged {
                    name,
                    log: log.clone(),
                }) as Box<dyn Fault>
            })
            .collect();
        let cfg = SendConfig::for_target(&target, &plan, 1.0, 4);
        let sent = send(&mut faults, &scene, cfg).await.unwrap();
        assert!(sent.is_ok());
        assert_eq!(
            *log.lock().unwrap(),
            [
                "a setup",
                "b setup",
                "a acted until the stream ended",
                "b acted until the stream ended",
                "b teardown (sent true, concurrency 6)",
                "a teardown (sent true, concurrency 6)",
            ]
        );
        let found = findings(&mut faults, &plan, None);
        assert_eq!(found.notes.len(), 2);
        assert_eq!(
            found.not_exercised.as_deref(),
            Some("a met nothing; b met nothing")
        );
    }
}
