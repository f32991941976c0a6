//! `report.html`: self-contained (no network), carries every attempt of
//! every history, and draws them in a real browser without a script error:
//! a green run calm (no red mark, no alarming section, every level it ran
//! met), a failing run with the keys its failures cite first and marked
//! and the level it did not meet named. A screenshot of each is kept in
//! `reports/screenshots/` (the test prints the paths).
//!
//! The browser is the machine's headless Chromium (`chromium-headless-shell`
//! or `chromium`). Without one the browser tests skip, except when
//! `HOOKSTORM_REQUIRE_BROWSER=1` (set by `.ci/run`, which installs it).
//!
//! Two runs serve every test here and in `tests/verify.rs`, each made once
//! per test binary: a failing, faulted one and a green one. Tests only read
//! their folders; a test that changes files changes a copy.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{output_text as text, run_binary as hookstorm, scenario_dir_arg, TestResult};

/// A folder of this test binary's own under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("report-html-{}", std::process::id()))
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

/// Runs `args` (a `hookstorm run` without `--out`) into a fresh folder
/// and returns the run's report folder; the run must exit `code`.
fn run_into(name: &str, args: &[&str], code: i32) -> PathBuf {
    let dir = scratch(name);
    let scenario_dir = scenario_dir_arg();
    let mut all = vec!["run", "--scenario-dir", &scenario_dir];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", "out"]);
    let o = hookstorm(&all, &dir);
    assert_eq!(o.status.code(), Some(code), "{}", text(&o));
    dir.join("out/latest")
        .canonicalize()
        .expect("a report folder")
}

/// A failing, faulted run (a duplicate bug, process kills, a database
/// cut): its report folder, made once.
pub(crate) fn faulted_report() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        run_into(
            "faulted",
            &[
                "--defect",
                "check-then-insert",
                "--scenario",
                "baseline",
                "--scenario",
                "concurrent-duplicates",
                "--scenario",
                "kill-under-load",
                "--seed",
                "8",
            ],
            1,
        )
    })
}

/// A green run with forged deliveries refused, deliveries the front kills
/// by design, two accounts, stalled uploads and every scenario of delivery
/// basics: its report folder, made once.
pub(crate) fn green_report() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        run_into(
            "green",
            &[
                "--scenario",
                "baseline",
                "--scenario",
                "bad-signature",
                "--scenario",
                "redirect",
                "--scenario",
                "account-isolation",
                "--scenario",
                "timeout-before-commit",
                "--scenario",
                "raw-body",
                "--scenario",
                "retry-schedule",
                "--scenario",
                "poison-event",
                "--seed",
                "5",
            ],
            0,
        )
    })
}

/// A copy of report folder `from` in a fresh folder named `name`.
pub(crate) fn copy_of(from: &Path, name: &str) -> PathBuf {
    let to = scratch(name);
    crate::common::copy_tree(from, &to);
    to
}

/// The JSON the page carries.
fn embedded_data(html: &str) -> Value {
    let start = html
        .find("<script type=\"application/json\" id=\"data\">")
        .expect("a data block");
    let rest = &html[start..];
    let body = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
    serde_json::from_str(body).expect("the data block is JSON")
}

/// Attempt lines in a history file.
fn attempts_in(history: &Path) -> usize {
    std::fs::read_to_string(history)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"type\":\"attempt\""))
        .count()
}

fn timeline_marks(data: &Value) -> usize {
    data["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["timeline"]["deliveries"].as_array())
        .flatten()
        .map(|d| d["a"].as_array().unwrap().len())
        .sum()
}

#[test]
fn the_report_page_is_self_contained_and_carries_every_attempt_and_fault() -> TestResult {
    let latest = faulted_report();
    let html = std::fs::read_to_string(latest.join("report.html"))?;
    // Nothing fetched from anywhere: no external script, style, image or font.
    for banned in [
        "<script src",
        "<link",
        "<img",
        "@import",
        "url(",
        "https://",
        "http-equiv",
    ] {
        assert!(!html.contains(banned), "report.html contains {banned:?}");
    }
    let data = embedded_data(&html);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(latest.join("report.json"))?)?;
    assert_eq!(data["verdict"], report["verdict"]);
    assert_eq!(data["seed"], 8);
    let mut total = 0;
    for (s, r) in data["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .zip(report["scenarios"].as_array().unwrap())
    {
        assert_eq!(s["name"], r["name"]);
        let history = latest.join(r["history"].as_str().unwrap());
        let marks: usize = s["timeline"]["deliveries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["a"].as_array().unwrap().len())
            .sum();
        assert_eq!(marks, attempts_in(&history), "{}", s["name"]);
        assert_eq!(s["timeline"]["attempts"], marks);
        assert_eq!(
            s["timeline"]["deliveries"].as_array().unwrap().len() as u64,
            r["check"]["counts"]["deliveries"].as_u64().unwrap(),
            "{}",
            s["name"]
        );
        total += marks;
    }
    assert_eq!(timeline_marks(&data), total);
    // The kills and restarts of kill-under-load are on its timeline.
    let kill = data["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "kill-under-load")
        .unwrap();
    let faults: Vec<&str> = kill["timeline"]["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["fault"].as_str().unwrap())
        .collect();
    assert!(
        faults.contains(&"kill") && faults.contains(&"restart"),
        "{faults:?}"
    );
    // The failing invariant's evidence cites history lines the page links.
    assert!(html.contains("concurrent-duplicates/history.jsonl"));
    Ok(())
}

/// The machine's headless Chromium, if any.
fn chromium() -> Option<PathBuf> {
    for name in [
        "chromium-headless-shell",
        "chromium",
        "chromium-browser",
        "google-chrome",
    ] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let p = Path::new(dir).join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    let shell = Path::new("/usr/lib/chromium/chromium-headless-shell");
    shell.is_file().then(|| shell.to_path_buf())
}

fn browser_or_skip() -> Option<PathBuf> {
    match chromium() {
        Some(b) => Some(b),
        None if std::env::var("HOOKSTORM_REQUIRE_BROWSER").as_deref() == Ok("1") => {
            panic!("HOOKSTORM_REQUIRE_BROWSER=1 but no chromium-headless-shell or chromium on PATH (hint: apt-get install chromium-headless-shell)")
        }
        None => {
            eprintln!(
                "skipped: no headless Chromium (set HOOKSTORM_REQUIRE_BROWSER=1 to require it)"
            );
            None
        }
    }
}

/// Runs the browser on `page` with `args`, killed after 60 s; returns
/// stdout and stderr.
fn browse(browser: &Path, page: &Path, args: &[String]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    // Into files, not pipes: a dumped DOM fills a pipe long before the
    // browser exits.
    let (out_path, err_path) = (profile.path().join("out"), profile.path().join("err"));
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--window-size=1280,2400",
            "--virtual-time-budget=5000",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::from(std::fs::File::create(&out_path).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()))
        .spawn()
        .expect("the browser starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the browser did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    (read(&out_path), read(&err_path))
}

fn body_attr(dom: &str, name: &str) -> i64 {
    let body = &dom[dom.find("<body").expect("a body")..];
    let body = &body[..body.find('>').unwrap()];
    let key = format!("{name}=\"");
    let at = body
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {body}"))
        + key.len();
    body[at..at + body[at..].find('"').unwrap()]
        .parse()
        .unwrap()
}

/// Console errors the browser logged for the page.
fn console_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect()
}

/// The DOM without its scripts and styles: what a reader sees.
fn shown(dom: &str) -> String {
    let mut out = String::new();
    let mut rest = dom;
    while let Some(i) = rest
        .find("<script")
        .into_iter()
        .chain(rest.find("<style"))
        .min()
    {
        out.push_str(&rest[..i]);
        let close = if rest[i..].starts_with("<script") {
            "</script>"
        } else {
            "</style>"
        };
        match rest[i..].find(close) {
            Some(j) => rest = &rest[i + j + close.len()..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// Opens `page`: the DOM after its script ran, which must have raised no
/// error and drawn what is in view of every timeline; a screenshot is
/// kept as `reports/screenshots/<shot>`.
fn draw(browser: &Path, page: &Path, data: &Value, shot: &str) -> String {
    let began = Instant::now();
    let (dom, stderr) = browse(browser, page, &["--dump-dom".into()]);
    let elapsed = began.elapsed();
    assert_eq!(console_errors(&stderr), Vec::<&str>::new(), "{stderr}");
    assert_eq!(body_attr(&dom, "data-errors"), 0, "{dom}");
    // Every attempt of every history is laid out as a mark, and what is in
    // view is drawn: the marks in the DOM are the ones the page counts.
    assert_eq!(body_attr(&dom, "data-marks"), timeline_marks(data) as i64);
    let drawn = dom.matches("class=\"mark ").count() as i64;
    assert!(drawn > 0, "no mark drawn");
    assert_eq!(body_attr(&dom, "data-drawn"), drawn);
    eprintln!(
        "browser: {} marks laid out, {drawn} drawn, {:.2}s",
        body_attr(&dom, "data-marks"),
        elapsed.as_secs_f64()
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(shot);
    browse(browser, page, &[format!("--screenshot={}", path.display())]);
    let png = std::fs::read(&path).unwrap();
    assert!(
        png.len() > 10_000 && png.starts_with(b"\x89PNG"),
        "{} bytes",
        png.len()
    );
    eprintln!("screenshot: {}", path.display());
    dom
}

/// One scenario of a page's data.
fn scenario<'a>(data: &'a Value, name: &str) -> &'a Value {
    data["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no scenario {name}"))
}

#[test]
fn a_failing_run_marks_the_keys_its_failures_cite_first_and_names_the_level_it_did_not_meet(
) -> TestResult {
    let latest = faulted_report();
    let page = latest.join("report.html");
    let data = embedded_data(&std::fs::read_to_string(&page)?);
    // The keys concurrent-duplicates' failures cite lead its timeline, marked.
    let cd = scenario(&data, "concurrent-duplicates");
    let mut cited: Vec<&str> = cd["check"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["verdict"] == "fail")
        .flat_map(|r| r["evidence"].as_array().unwrap())
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    cited.sort_unstable();
    cited.dedup();
    assert!(!cited.is_empty());
    let rows = cd["timeline"]["deliveries"].as_array().unwrap();
    for (i, row) in rows.iter().enumerate() {
        let key = row["key"].as_str().unwrap();
        assert_eq!(row.get("cited").is_some(), cited.contains(&key), "{key}");
        assert_eq!(i < cited.len(), cited.contains(&key), "row {i}: {key}");
    }
    let level = data["conformance"]["levels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["id"] == "exactly-once")
        .unwrap();
    assert_eq!(level["status"], "not-met");
    assert!(level["why"]
        .as_str()
        .unwrap()
        .starts_with("failed: concurrent-duplicates (I2"));
    // summary.md opens on its failures too.
    let summary = std::fs::read_to_string(latest.join("summary.md"))?;
    let (failures, statement) = (
        summary.find("## Failures").expect("a failures section"),
        summary
            .find("## Conformance")
            .expect("a conformance section"),
    );
    assert!(failures < statement, "{summary}");
    let Some(browser) = browser_or_skip() else {
        return Ok(());
    };
    let dom = draw(&browser, &page, &data, "report-failing.png");
    let seen = shown(&dom);
    assert!(seen.contains("kill-under-load") && seen.contains("exactly-once"));
    assert!(
        seen.contains(r#"data-level="exactly-once" data-status="not-met""#),
        "{seen}"
    );
    assert!(seen.contains("exactly once under duplicates and reordering"));
    assert!(body_attr(&dom, "data-cited") >= cited.len() as i64);
    // The page opens on what is red: the first failure's finding, its
    // evidence and its reproduce command end within the first screen
    // (900 px), before the statement and the matrix.
    let bottom = body_attr(&dom, "data-first-failure-bottom");
    assert!(
        (1..900).contains(&bottom),
        "the first failure ends at {bottom} px"
    );
    let (failures, statement) = (
        dom.find("id=\"failures\"").expect("a failures section"),
        dom.find("id=\"conformance\"")
            .expect("a conformance section"),
    );
    assert!(
        failures < statement,
        "the failures come after the statement"
    );
    for key in &cited {
        assert!(
            seen.contains(&format!("✗ {key} · acct_a")),
            "{key} is not marked"
        );
    }
    Ok(())
}

#[test]
fn a_green_run_draws_no_red_mark_and_no_alarming_section() -> TestResult {
    let latest = green_report();
    let page = latest.join("report.html");
    let data = embedded_data(&std::fs::read_to_string(&page)?);
    // What each attempt came to, from the one table: nothing wrong; the
    // forged deliveries refused as required, the redirected ones dead by design.
    let wrong: Vec<&str> = data["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["drawn"] == "wrong")
        .map(|o| o["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(wrong, ["accepted-wrongly", "rejected-wrongly", "dead"]);
    for s in data["scenarios"].as_array().unwrap() {
        let outcomes = s["check"]["counts"]["outcomes"].as_object().unwrap();
        for w in &wrong {
            assert!(outcomes.get(*w).is_none(), "{}: {outcomes:?}", s["name"]);
        }
    }
    let count =
        |name: &str, o: &str| scenario(&data, name)["check"]["counts"]["outcomes"][o].as_u64();
    assert!(count("bad-signature", "rejected-as-required") > Some(0));
    assert!(count("redirect", "dead-by-design") > Some(0));
    assert!(count("timeout-before-commit", "failed-by-design") > Some(0));
    // Every scenario of delivery basics ran and passed: the level is met.
    let levels = data["conformance"]["levels"].as_array().unwrap();
    assert_eq!(levels[0]["id"], "basics");
    assert_eq!(levels[0]["status"], "met");
    assert!(levels.iter().all(|l| l["status"] != "not-met"));
    let summary = std::fs::read_to_string(latest.join("summary.md"))?;
    for alarming in ["## Failures", "## Dead letters", "## Not decided", "| ❌"] {
        assert!(!summary.contains(alarming), "{alarming} in\n{summary}");
    }
    assert!(summary.contains("## Dead by design"), "{summary}");
    assert!(
        summary.contains("| delivery basics | ✅ met |"),
        "{summary}"
    );
    let Some(browser) = browser_or_skip() else {
        return Ok(());
    };
    let dom = draw(&browser, &page, &data, "report-green.png");
    assert_eq!(body_attr(&dom, "data-wrong"), 0);
    let seen = shown(&dom);
    for alarming in [
        "d-wrong",
        "fail-block",
        "class=\"dead-letters\"",
        "row-cited",
        "v-fail",
    ] {
        assert!(!seen.contains(alarming), "{alarming} on a green page");
    }
    assert!(seen.contains("o-rejected-as-required"));
    assert!(seen.contains(r#"data-level="basics" data-status="met""#));
    Ok(())
}

#[test]
fn a_scenario_with_thousands_of_deliveries_stays_small_and_draws_only_what_is_in_view() -> TestResult
{
    // A real report, whose baseline history gets 6000 more deliveries.
    let latest = copy_of(green_report(), "thousands");
    let history = latest.join("baseline/history.jsonl");
    let mut lines = std::fs::read_to_string(&history)?;
    let first: Value = serde_json::from_str(
        lines
            .lines()
            .find(|l| l.contains("\"type\":\"attempt\""))
            .unwrap(),
    )?;
    for i in 0..6000 {
        let mut a = first.clone();
        a["delivery"] = Value::from(format!("whd_bulk{i}"));
        a["key"] = Value::from(format!("tsk_bulk{i}"));
        a["outcome"] = Value::from(if i % 7 == 0 { "fail" } else { "ok" });
        lines.push_str(&a.to_string());
        lines.push('\n');
    }
    std::fs::write(&history, lines)?;
    let mut report: Value =
        serde_json::from_str(&std::fs::read_to_string(latest.join("report.json"))?)?;
    let o = report.as_object_mut().unwrap();
    for k in ["format_version", "verdict", "exit_code", "coverage"] {
        o.remove(k);
    }
    let report: hookstorm::report::RunReport = serde_json::from_value(report)?;
    let html = hookstorm::report::html::render(&report, &latest);
    let expected = attempts_in(&history);
    let data = embedded_data(&html);
    let baseline: usize = scenario(&data, "baseline")["timeline"]["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["a"].as_array().unwrap().len())
        .sum();
    assert_eq!(baseline, expected);
    let marks = timeline_marks(&data);
    // About 100 bytes a delivery of one attempt: thousands of deliveries
    // stay well under a megabyte.
    assert!(
        html.len() < 110 * expected + 100_000,
        "{} bytes",
        html.len()
    );
    let page = latest.join("large.html");
    std::fs::write(&page, &html)?;
    let Some(browser) = browser_or_skip() else {
        return Ok(());
    };
    let (dom, stderr) = browse(&browser, &page, &["--dump-dom".into()]);
    assert_eq!(console_errors(&stderr), Vec::<&str>::new(), "{stderr}");
    assert_eq!(body_attr(&dom, "data-errors"), 0);
    assert_eq!(body_attr(&dom, "data-marks"), marks as i64);
    let drawn = body_attr(&dom, "data-drawn");
    // The other scenarios are small enough to draw whole; of the large
    // one, only the rows in view.
    let others = (marks - expected) as i64;
    assert!(
        drawn > others && drawn - others < 200,
        "{drawn} of {marks} drawn"
    );
    Ok(())
}

#[test]
fn a_sink_report_draws_the_senders_retries_against_their_windows_in_a_browser() -> TestResult {
    let dir = tempfile::tempdir()?;
    let o = hookstorm(
        &[
            "sink",
            "--scenario-dir",
            &scenario_dir_arg(),
            "--scenario",
            "sender-retries",
            "--seed",
            "4",
            "--out",
            "out",
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let latest = dir.path().join("out/latest").canonicalize()?;
    let page = latest.join("report.html");
    let html = std::fs::read_to_string(&page)?;
    assert!(
        html.contains("<title>hookstorm sink "),
        "the page names the command"
    );
    let data = embedded_data(&html);
    let rows = data["scenarios"][0]["timeline"]["deliveries"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(rows.len(), 12, "one row per emitted event");
    // Every retry carries the window its schedule gives it, and lies in it
    // (within the checker's slack): the reference sender passed S1.
    let mut windows = 0;
    for row in &rows {
        for m in row["a"].as_array().unwrap() {
            if let Some(w) = m[9].as_array() {
                windows += 1;
                let (t, lo, hi) = (
                    m[0].as_f64().unwrap(),
                    w[0].as_f64().unwrap(),
                    w[1].as_f64().unwrap(),
                );
                let early = hookstorm::check::sender::EARLY.as_secs_f64() * 1000.0 + 1.0;
                let late = hookstorm::check::sender::late_ms(hi) + 1.0;
                assert!(
                    t >= lo - early && t <= hi + late,
                    "{t} outside [{lo}, {hi}]"
                );
            }
        }
    }
    assert!(windows >= 12, "{windows} windows");
    let Some(browser) = browser_or_skip() else {
        return Ok(());
    };
    let (dom, stderr) = browse(&browser, &page, &["--dump-dom".into()]);
    assert_eq!(console_errors(&stderr), Vec::<&str>::new(), "{stderr}");
    assert_eq!(body_attr(&dom, "data-errors"), 0, "{dom}");
    assert!(
        dom.matches("class=\"window\"").count() >= 12,
        "no window drawn"
    );
    assert!(
        dom.contains("S1 retry-envelope"),
        "the matrix names the sender invariants"
    );
    Ok(())
}
