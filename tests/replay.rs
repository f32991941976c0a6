//! The replay script of `hookstorm::shrink::replay`, run for real: bash and
//! curl send a plan to the reference receiver, signed at run time by the
//! built `hookstorm sign` from secrets in the environment, and the
//! receiver's state shows what arrived.

use std::collections::BTreeMap;
use std::process::{Command, Output};

use hookstorm::delivery::{task_body, TaskStatus};
use hookstorm::fault_spec::{Forgery, Signing};
use hookstorm::history::Intent;
use hookstorm::plan::{Plan, Redelivery};
use hookstorm::shrink::replay::replay_script;
use hookstorm::state::probe::Probe;
use hookstorm::state::State;
use hookstorm::target::Target;
use hookstorm_receiver::Defect;

use hookstorm::check::{InvariantId, Verdict};
use hookstorm::history::Event;
use hookstorm::profile::signature::Secret;
use hookstorm::profile::vocabulary::Vocabulary;
use hookstorm::shrink::account::account;

use crate::common::{run_embedded, scenarios, secrets_csv, target_secrets, walk, TestResult};

const ENV_A: &str = "HS_REPLAY_SECRETS_A";
const ENV_B: &str = "HS_REPLAY_SECRETS_B";

fn envs() -> Vec<(String, String)> {
    vec![
        ("acct_a".to_string(), ENV_A.to_string()),
        ("acct_b".to_string(), ENV_B.to_string()),
    ]
}

fn empty_plan() -> Plan {
    Plan {
        scenario: "replay-test".into(),
        seed: 5,
        accounts: vec!["acct_a".into(), "acct_b".into()],
        faults: Vec::new(),
        deliveries: Vec::new(),
        notes: Vec::new(),
    }
}

/// Genuine deliveries with copies, replays, a fresh id, a redelivery, a
/// discarded ack and rotation signings, and forgeries of five kinds.
/// Returns the plan, the genuine task ids and the forged ones.
fn mixed_plan() -> (Plan, Vec<String>, Vec<String>) {
    let mut rng = hookstorm::plan::rng_for(5, "replay-test", "bodies", 0);
    let mut plan = empty_plan();
    let mut genuine = Vec::new();
    let at = |s: u32| format!("2026-11-29T10:00:{s:02}Z");
    let b = task_body(&mut rng, Some("job-1".into()), TaskStatus::Completed, at(1));
    genuine.push(b.task.id.clone());
    let d = plan.push_new(&mut rng, "acct_a", b, Intent::Genuine);
    d.copies = 3;
    d.redeliveries = vec![
        Redelivery::Replay,
        Redelivery::FreshId("whd_fresh0000000001".into()),
        Redelivery::Redeliver,
    ];
    let b = task_body(&mut rng, Some("job-2".into()), TaskStatus::Failed, at(2));
    genuine.push(b.task.id.clone());
    let d = plan.push_new(&mut rng, "acct_a", b, Intent::Genuine);
    d.drop_acks = 1;
    d.wave = 1;
    d.signing = Signing::OldAndNew;
    let b = task_body(&mut rng, Some("job-3".into()), TaskStatus::Completed, at(3));
    genuine.push(b.task.id.clone());
    let d = plan.push_new(&mut rng, "acct_b", b, Intent::Genuine);
    d.signing = Signing::NewOnly;
    d.hold_attempts = 2;
    let mut forged = Vec::new();
    for f in [
        Forgery::WrongSecret,
        Forgery::TamperedBody,
        Forgery::MissingHeader,
        Forgery::StaleTimestamp,
        Forgery::CrossAccount,
    ] {
        let b = task_body(
            &mut rng,
            Some(format!("job-forged-{}-1", f.as_str())),
            TaskStatus::Completed,
            at(9),
        );
        forged.push(b.task.id.clone());
        let intent = if f == Forgery::CrossAccount {
            Intent::CrossAccount
        } else {
            Intent::Forged
        };
        let d = plan.push_new(&mut rng, "acct_a", b, intent);
        d.forgery = Some(f);
        d.detail = Some(f.as_str().into());
    }
    (plan, genuine, forged)
}

/// Writes the plan's script into a new folder and runs it with `env`, on a
/// blocking thread (the receiver answers on the test's runtime).
async fn run_script(
    plan: &Plan,
    target: &Target,
    env: Vec<(&'static str, String)>,
) -> (Output, tempfile::TempDir) {
    let (plan, target) = (plan.clone(), target.clone());
    tokio::task::spawn_blocking(move || run_script_now(&plan, &target, &env))
        .await
        .expect("the script's thread ends")
}

fn run_script_now(
    plan: &Plan,
    target: &Target,
    env: &[(&str, String)],
) -> (Output, tempfile::TempDir) {
    let script = replay_script(plan, &target.url, &target.profile, &envs(), target.max_body)
        .expect("the script is made");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = script.write_to(dir.path()).expect("the script is written");
    let mut cmd = Command::new("bash");
    cmd.arg(&path)
        .env("HOOKSTORM", env!("CARGO_BIN_EXE_hookstorm"))
        .env_remove(ENV_A)
        .env_remove(ENV_B);
    for (k, v) in env {
        cmd.env(k, v);
    }
    (cmd.output().expect("bash runs"), dir)
}

fn secret_env(target: &Target) -> Vec<(&'static str, String)> {
    vec![
        (ENV_A, secrets_csv(&target.secrets["acct_a"])),
        (ENV_B, secrets_csv(&target.secrets["acct_b"])),
    ]
}

/// `label: answer` lines the script printed.
fn answers(out: &Output) -> BTreeMap<String, String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.rsplit_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn state(target: &Target) -> State {
    Probe::from_config(&target.state)
        .expect("probe")
        .read_state()
        .await
        .expect("state reads")
}

fn stored(state: &State, key: &str) -> usize {
    state.inbox.iter().filter(|r| r.key == key).count()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replay_script_resends_the_plan_signed_at_run_time_and_forgeries_are_refused(
) -> TestResult {
    let (receiver, target) = hookstorm_cli::builtin::start(None, None).await?;
    let (plan, genuine, forged) = mixed_plan();
    let env = secret_env(&target);
    let (out, _dir) = run_script(&plan, &target, env).await;
    let log = text(&out);
    assert!(out.status.success(), "{log}");
    let got = answers(&out);
    let ok = |label: &str| {
        got.iter()
            .any(|(k, v)| k.starts_with(label) && v.starts_with('2'))
    };
    // Every genuine request, copies and redeliveries included, was accepted.
    let d0 = &plan.deliveries[0].id;
    for label in [
        format!("d0 {d0} copy 1/3"),
        format!("d0 {d0} copy 2/3"),
        format!("d0 {d0} copy 3/3"),
        format!("d0 {d0} replay"),
        "d0 whd_fresh0000000001 fresh id".to_string(),
        format!("d0 {d0} redelivery"),
        format!("d1 {}", plan.deliveries[1].id),
        format!("d1 {} attempt 2", plan.deliveries[1].id),
        format!("d2 {}", plan.deliveries[2].id),
    ] {
        assert!(ok(&label), "{label} not answered 2xx:\n{log}");
    }
    // Every forgery went out and was refused with a 4xx.
    for d in &plan.deliveries[3..] {
        let label = format!("d{} {}", d.index, d.id);
        let answer = got
            .get(&label)
            .unwrap_or_else(|| panic!("{label} not sent:\n{log}"));
        assert!(answer.starts_with('4'), "{label} answered {answer}:\n{log}");
    }
    // The held-back delivery of wave 1 went out after the rest of wave 1... (wave order).
    let pos = |needle: &str| {
        log.find(needle)
            .unwrap_or_else(|| panic!("{needle}:\n{log}"))
    };
    assert!(pos("# wave 1") < pos(&format!("d0 {d0} copy")));
    assert!(pos(&format!("d0 {d0} redelivery")) < pos("# wave 2"));
    assert!(pos("# wave 2") < pos(&format!("d1 {}", plan.deliveries[1].id)));
    assert!(
        pos(&format!("d3 {}", plan.deliveries[3].id))
            < pos(&format!("d2 {}", plan.deliveries[2].id))
    );
    let st = state(&target).await;
    for key in &genuine {
        assert_eq!(stored(&st, key), 1, "{key} stored once:\n{log}");
    }
    for key in &forged {
        assert_eq!(stored(&st, key), 0, "forged {key} not stored:\n{log}");
    }
    receiver.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replay_script_reproduces_a_forgery_accepted_by_a_receiver_that_skips_the_check(
) -> TestResult {
    let (receiver, target) =
        hookstorm_cli::builtin::start(Some(Defect::SkipsSignatureCheck), None).await?;
    let (plan, _, forged) = mixed_plan();
    let env = secret_env(&target);
    let (out, _dir) = run_script(&plan, &target, env).await;
    assert!(out.status.success(), "{}", text(&out));
    let st = state(&target).await;
    // The wrong-secret, tampered-body and missing-header forgeries went out
    // and a receiver that never checks a signature stored them.
    for key in &forged[..3] {
        assert_eq!(stored(&st, key), 1, "{key}:\n{}", text(&out));
    }
    receiver.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replay_script_sends_waves_in_order_so_a_last_arrival_winner_is_reproduced(
) -> TestResult {
    let (receiver, target) =
        hookstorm_cli::builtin::start(Some(Defect::LastArrivalWins), None).await?;
    let mut rng = hookstorm::plan::rng_for(9, "replay-test", "bodies", 0);
    let mut plan = empty_plan();
    let newer = task_body(
        &mut rng,
        Some("job-w".into()),
        TaskStatus::Completed,
        "2026-11-29T10:00:02Z".into(),
    );
    let older = task_body(
        &mut rng,
        Some("job-w".into()),
        TaskStatus::Completed,
        "2026-11-29T10:00:01Z".into(),
    );
    let (newer_id, older_id) = (newer.task.id.clone(), older.task.id.clone());
    plan.push_new(&mut rng, "acct_a", newer, Intent::Genuine);
    plan.push_new(&mut rng, "acct_a", older, Intent::Genuine)
        .wave = 1;
    let env = secret_env(&target);
    let (out, _dir) = run_script(&plan, &target, env).await;
    assert!(out.status.success(), "{}", text(&out));
    // Both rows processed: the winner is what the worker made of both.
    let (st, drained) = Probe::from_config(&target.state)?
        .wait_drained(std::time::Duration::from_secs(10))
        .await?;
    assert!(drained && st.inbox.len() == 2, "{st:?}");
    let w: Vec<&str> = st
        .winners
        .iter()
        .flatten()
        .filter(|w| w.job_key == "job-w")
        .map(|w| w.task_id.as_str())
        .collect();
    // The defect picks the last arrival (the older task): the order was kept.
    assert_eq!(
        w,
        [older_id.as_str()],
        "newer is {newer_id}:\n{}",
        text(&out)
    );
    receiver.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replay_script_holds_no_secret_and_stops_when_a_variable_is_unset() -> TestResult {
    let (receiver, target) = hookstorm_cli::builtin::start(None, None).await?;
    let (plan, genuine, _) = mixed_plan();
    let script = replay_script(
        &plan,
        &target.url,
        &target.profile,
        &envs(),
        target.max_body,
    )?;
    let dir = tempfile::tempdir()?;
    script.write_to(dir.path())?;
    let secrets = target_secrets(&target);
    assert!(secrets.len() >= 4);
    for file in walk(dir.path()) {
        let bytes = std::fs::read(&file)?;
        let text = String::from_utf8_lossy(&bytes);
        for s in &secrets {
            assert!(!text.contains(s.as_str()), "a secret in {}", file.display());
        }
    }
    assert!(script.script.contains(ENV_A) && script.script.contains(ENV_B));
    // Only acct_a's variable is set: the script names the missing one and sends nothing.
    let env = vec![(ENV_A, secrets_csv(&target.secrets["acct_a"]))];
    let (out, _dir) = run_script(&plan, &target, env).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "set {ENV_B} to the signing secret(s) of account acct_b"
        )),
        "{err}"
    );
    let st = state(&target).await;
    assert!(genuine.iter().all(|k| stored(&st, k) == 0));
    receiver.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_run_is_told_from_its_history_and_its_replay_fails_the_same_way() -> TestResult {
    let seed = 31;
    let name = "bad-signature";
    let (outcome, _out) = run_embedded(
        Some(Defect::SkipsSignatureCheck),
        None,
        &[name],
        seed,
        false,
    )
    .await;
    let s = &outcome.report.scenarios[0];
    let i4 = s.check.result(InvariantId::I4).expect("I4 checked");
    assert_eq!(i4.verdict, Verdict::Fail, "{}", i4.summary);
    let events: Vec<Event> =
        hookstorm::history::read(&outcome.dir.join(&s.history))?.collect::<Result<_, _>>()?;
    let plan = hookstorm::workload::plan(
        &scenarios(&[name])[0],
        hookstorm::run::scenario_seed(seed, name),
    );
    let told = account(&plan, &events, &s.check, &Vocabulary::answerline());
    assert!(told.starts_with(&format!("{name}, seed ")), "{told}");
    assert!(told.contains("\nI4 no-phantom failed: "), "{told}");
    assert!(told.contains(", forged: "), "{told}");
    assert!(told.contains("): answered 2"), "{told}");
    assert!(told.contains("found: stored a forged delivery\n"), "{told}");
    assert!(
        told.contains("\n  expected: nothing stored for a forged"),
        "{told}"
    );
    // The same plan, replayed by the script against a fresh receiver with
    // the same defect, stores the same forged deliveries.
    let (receiver, target) =
        hookstorm_cli::builtin::start(Some(Defect::SkipsSignatureCheck), None).await?;
    let env = secret_env(&target);
    let (out, _dir) = run_script(&plan, &target, env).await;
    assert!(out.status.success(), "{}", text(&out));
    let st = state(&target).await;
    let forged: Vec<&str> = i4.evidence.iter().map(|e| e.key.as_str()).collect();
    assert!(!forged.is_empty());
    for key in forged {
        assert_eq!(
            stored(&st, key),
            1,
            "{key} not stored by the replay:\n{}",
            text(&out)
        );
    }
    receiver.shutdown().await;
    Ok(())
}

#[test]
fn sign_prints_only_the_signature_or_a_forgery_of_it_from_a_secret_in_the_environment() -> TestResult
{
    let dir = tempfile::tempdir()?;
    let body = br#"{"task":{"id":"tsk_1"}}"#;
    std::fs::write(dir.path().join("body.json"), body)?;
    let sign = |flags: &str| -> Output {
        Command::new("bash")
            .arg("-c")
            .arg(format!(
                "{} sign --secret-env HS_SIGN_SECRET --id whd_1 {flags} < body.json",
                env!("CARGO_BIN_EXE_hookstorm")
            ))
            .current_dir(dir.path())
            .env("HS_SIGN_SECRET", "whsec_one,whsec_two")
            .output()
            .expect("sign runs")
    };
    let headers = |o: &Output| -> Vec<(String, String)> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| l.split_once(": "))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let profile = hookstorm::profile::Profile::default_profile();
    let verifies = |h: &[(String, String)], secret: &str| {
        profile
            .scheme
            .verify(
                &[Secret::new(secret)],
                h,
                body,
                chrono::Utc::now().timestamp(),
                profile.tolerance_secs(),
            )
            .is_ok()
    };
    let plain = sign("--signature-only");
    let h = headers(&plain);
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(h[0].0, "Webhook-Signature");
    assert!(verifies(&h, "whsec_one") && verifies(&h, "whsec_two"));
    for forge in [
        "wrong-secret",
        "missing-header",
        "malformed-header",
        "stale-timestamp",
        "future-timestamp",
    ] {
        let o = sign(&format!("--signature-only --forge {forge}"));
        assert!(o.status.success(), "{forge}: {}", text(&o));
        let h = headers(&o);
        assert!(
            !verifies(&h, "whsec_one") && !verifies(&h, "whsec_two"),
            "{forge}: {h:?}"
        );
    }
    let rotated = headers(&sign("--signature-only --signing old+new"));
    assert!(verifies(&rotated, "whsec_two"), "{rotated:?}");
    assert_eq!(rotated[0].1.matches(",v1=").count(), 3, "{rotated:?}");
    let bad = sign("--forge oversized");
    assert_eq!(bad.status.code(), Some(hookstorm::exit::USAGE));
    assert!(
        text(&bad).contains("expected FORGERY, one of tampered-body, wrong-secret"),
        "{}",
        text(&bad)
    );
    // Without --signature-only, the profile's id header and Content-Type too.
    let full = headers(&sign(""));
    let names: Vec<&str> = full.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["Webhook-Id", "Webhook-Signature", "Content-Type"]);
    Ok(())
}

/// Under every built-in profile the script's requests carry that
/// provider's headers and a signature its verifier accepts, and its
/// forgeries one it refuses: the null receiver verifies with the profile's
/// own scheme and tolerance, answering 204 or 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_every_profile_genuine_requests_verify_and_forgeries_do_not() -> TestResult {
    for name in hookstorm::profile::BUILTIN_NAMES {
        let profile = hookstorm::profile::Profile::builtin(name).expect("built in");
        // A known gap: a script sends its body files as written, and a
        // body that carries its own send time (Linear's webhookTimestamp)
        // is stamped only by `run` and `bench`.
        if profile
            .body_template
            .as_deref()
            .is_some_and(hookstorm::profile::envelope::template_marks_attempts)
        {
            eprintln!(
                "{name}: skipped: its bodies carry marks of each attempt (a send time, a signature), which a script does not fill"
            );
            continue;
        }
        let secrets = vec![
            hookstorm::fault::tamper::derived_secret(1, "replay-profile-old"),
            hookstorm::fault::tamper::derived_secret(1, "replay-profile-new"),
        ];
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/hooks/{{account}}", listener.local_addr()?);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(hookstorm::bench::null::serve(
            listener,
            profile.clone(),
            secrets.clone(),
            async {
                let _ = stopped.await;
            },
        ));
        let mut rng = hookstorm::plan::rng_for(2, name, "bodies", 0);
        let mut plan = empty_plan();
        plan.accounts = vec!["acct_a".into()];
        let at = "2026-11-29T10:00:00Z".to_string();
        for (k, signing) in [Signing::Current, Signing::OldAndNew, Signing::NewOnly]
            .into_iter()
            .enumerate()
        {
            let b = task_body(
                &mut rng,
                Some(format!("job-{k}")),
                TaskStatus::Completed,
                at.clone(),
            );
            let d = plan.push_new(&mut rng, "acct_a", b, Intent::Genuine);
            d.signing = signing;
            if k == 0 {
                d.copies = 2;
                d.redeliveries = vec![
                    Redelivery::Replay,
                    Redelivery::FreshId("whd_0000000000000abc".into()),
                    Redelivery::Redeliver,
                    Redelivery::ExpiredReplay,
                ];
            }
        }
        let genuine = plan.deliveries.len();
        for f in Forgery::ALL {
            if matches!(f, Forgery::CrossAccount | Forgery::ExpiredReplay) {
                continue; // one account here; expired replays ride on d0 above
            }
            let b = task_body(
                &mut rng,
                Some("job-f".into()),
                TaskStatus::Completed,
                at.clone(),
            );
            let d = plan.push_new(&mut rng, "acct_a", b, Intent::Forged);
            d.forgery = Some(f);
        }
        let script = replay_script(
            &plan,
            &url,
            &profile,
            &envs()[..1],
            hookstorm::bench::null::MAX_BODY,
        )?;
        let dir = tempfile::tempdir()?;
        let path = script.write_to(dir.path())?;
        let csv = secrets_csv(&secrets);
        let out = tokio::task::spawn_blocking(move || {
            Command::new("bash")
                .arg(&path)
                .env("HOOKSTORM", env!("CARGO_BIN_EXE_hookstorm"))
                .env(ENV_A, csv)
                .output()
        })
        .await??;
        let log = text(&out);
        assert!(out.status.success(), "{name}:\n{log}");
        let got = answers(&out);
        let mut sent = 0;
        for (label, code) in &got {
            let index: usize = label[1..label.find(' ').unwrap()].parse()?;
            let expired = label.ends_with("expired replay");
            let want = if index < genuine && !expired {
                "204"
            } else {
                "401"
            };
            // The oversized body is refused before its signature is read.
            let want = if plan.deliveries[index].forgery == Some(Forgery::Oversized) {
                "413"
            } else {
                want
            };
            assert_eq!(code, want, "{name}: {label}:\n{log}");
            sent += 1;
        }
        let skipped = script.script.matches("# skipped").count()
            + script.script.matches("expired replay skipped").count();
        // Every genuine request and every forgery went out, or was skipped as the run skips it.
        assert_eq!(
            sent + skipped,
            2 + 4 + 2 + (plan.deliveries.len() - genuine),
            "{name}:\n{log}"
        );
        let _ = stop.send(());
        server.await?;
    }
    Ok(())
}
