//! A small real receiver for tests: verifies signatures with the profile's
//! scheme, records every request and answers as the test says.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hookstorm::history::{Event, HistorySink};
use hookstorm::profile::signature::{Secret, VerifyError};
use hookstorm::profile::Profile;
use hookstorm::scenario::Scenario;
use hookstorm::sender::SendConfig;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

/// One request the server saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub key: Option<String>,
    pub start: Instant,
    pub end: Instant,
    pub verified: Result<(), VerifyError>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// How the server answers: (request, how many earlier requests had its key) -> (status, delay).
pub type Behave = Arc<dyn Fn(&Seen, usize) -> (u16, Duration) + Send + Sync>;

pub struct Server {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub fn url(&self) -> String {
        format!("http://{}/webhooks/{{account}}", self.addr)
    }
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

pub fn secrets(accounts: &[&str]) -> BTreeMap<String, Vec<Secret>> {
    accounts
        .iter()
        .enumerate()
        .map(|(i, a)| {
            (
                a.to_string(),
                vec![Secret::new(format!(
                    "whsec_dGVzdC1zZWNyZXQtbnVtYmVyLXt7e3t{i}"
                ))],
            )
        })
        .collect()
}

/// Answers 401 to bad signatures, 413 over `max_body`, else as `behave` says.
pub fn verifying(max_body: usize, behave: Behave) -> Behave {
    Arc::new(move |s: &Seen, n| {
        if s.body.len() > max_body {
            (413, Duration::ZERO)
        } else if s.verified.is_err() {
            (401, Duration::ZERO)
        } else {
            behave(s, n)
        }
    })
}

pub fn always(status: u16) -> Behave {
    Arc::new(move |_, _| (status, Duration::ZERO))
}

pub async fn serve(
    profile: Profile,
    secrets: BTreeMap<String, Vec<Secret>>,
    behave: Behave,
) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let state = (Arc::new(profile), Arc::new(secrets), behave, seen.clone());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let state = state.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let (profile, secrets, behave, seen) = state.clone();
                    async move {
                        let start = Instant::now();
                        let path = req.uri().path().to_string();
                        let hmap = req.headers().clone();
                        let headers = hmap
                            .iter()
                            .map(|(k, v)| {
                                (
                                    k.to_string(),
                                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                                )
                            })
                            .collect();
                        let body = req
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes().to_vec())
                            .unwrap_or_default();
                        let account = path.rsplit('/').next().unwrap_or_default().to_string();
                        let keys = secrets.get(&account).cloned().unwrap_or_default();
                        let verified = profile.scheme.verify(
                            &keys,
                            &hmap,
                            &body,
                            chrono::Utc::now().timestamp(),
                            profile.tolerance_secs(),
                        );
                        // The profile's event identity: what the history calls the key.
                        let key = profile.semantics.identity_of(
                            profile.delivery_id_header(),
                            &hmap,
                            &body,
                        );
                        // A Slack url_verification is answered with its
                        // challenge, as a Slack receiver must.
                        let challenge = serde_json::from_slice::<serde_json::Value>(&body)
                            .ok()
                            .filter(|v| v["type"] == "url_verification")
                            .and_then(|v| v["challenge"].as_str().map(str::to_string));
                        let mut s = Seen {
                            path,
                            headers,
                            body,
                            key,
                            start,
                            end: start,
                            verified,
                        };
                        let n = seen
                            .lock()
                            .unwrap()
                            .iter()
                            .filter(|x| x.key.is_some() && x.key == s.key)
                            .count();
                        let (status, delay) = behave(&s, n);
                        if !delay.is_zero() {
                            tokio::time::sleep(delay).await;
                        }
                        s.end = Instant::now();
                        seen.lock().unwrap().push(s);
                        // A 204 carries no body: the challenge goes with a 200.
                        let status = match (&challenge, status) {
                            (Some(_), 204) => 200,
                            _ => status,
                        };
                        let mut resp = hyper::Response::builder().status(status);
                        if (300..400).contains(&status) {
                            resp = resp.header("Location", "/elsewhere");
                        }
                        let answer = challenge.map(Bytes::from).unwrap_or_default();
                        Ok::<_, Infallible>(resp.body(Full::new(answer)).unwrap())
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Server { addr, seen }
}

/// Writes a scenario file and parses it.
pub fn scenario(dir: &std::path::Path, body: &str) -> Scenario {
    let path: PathBuf = dir.join("scenario.toml");
    let text = format!(
        "name = \"test\"\ndescription = \"d\"\nexpect = \"e\"\nwhen_it_fails = \"w\"\ncheck = [\"I1\", \"I2\"]\n{body}"
    );
    std::fs::write(&path, text).unwrap();
    Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

pub fn config(
    server: &Server,
    profile: Profile,
    accounts: &[&str],
    time_scale: f64,
    seed: u64,
) -> SendConfig {
    let mut cfg = SendConfig::new(server.url(), profile, secrets(accounts));
    cfg.time_scale = time_scale;
    cfg.seed = seed;
    cfg.concurrency = 8;
    cfg.max_body = 4096;
    cfg
}

/// Every attempt line of a history file.
pub fn attempts(path: &std::path::Path) -> Vec<hookstorm::history::Attempt> {
    hookstorm::history::read(path)
        .unwrap()
        .filter_map(|e| match e.unwrap() {
            Event::Attempt(a) => Some(a),
            _ => None,
        })
        .collect()
}

pub fn sink(dir: &std::path::Path) -> (HistorySink, PathBuf) {
    let path = dir.join("history.jsonl");
    (HistorySink::create(&path).unwrap(), path)
}
