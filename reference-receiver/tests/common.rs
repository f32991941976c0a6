//! Helpers shared by the integration tests: starting a receiver on either
//! store, signing and sending deliveries, reading the state.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use hookstorm::profile::signature::{Secret, SignInput};
use hookstorm::profile::Profile;
use hookstorm::state::State;
use hookstorm_receiver::pgtest::PgServer;
use hookstorm_receiver::{spawn, Account, Config, Spawned};
use http::{header, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// Which store a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Sqlite,
    Postgres,
}

pub const SECRET_A: &str = "secret-a";
pub const SECRET_B: &str = "secret-b";

static PG: Mutex<Weak<PgServer>> = Mutex::new(Weak::new());

/// A Postgres server shared by the tests running at the same time; stopped
/// when the last of them drops it. `None` when Postgres is not installed.
pub fn shared_pg() -> Option<Arc<PgServer>> {
    let mut slot = PG.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = slot.upgrade() {
        return Some(s);
    }
    let s = Arc::new(PgServer::start_or_skip()?);
    *slot = Arc::downgrade(&s);
    Some(s)
}

/// A running receiver and what keeps its store alive.
pub struct Target {
    pub rx: Spawned,
    pub http: Http,
    _dir: tempfile::TempDir,
    _pg: Option<Arc<PgServer>>,
}

pub fn accounts() -> Vec<Account> {
    vec![
        Account::new("acct_a", vec![Secret::new(SECRET_A)]),
        Account::new("acct_b", vec![Secret::new(SECRET_B)]),
    ]
}

pub fn config() -> Config {
    Config::new(accounts())
}

/// A store URL of this kind (None: Postgres not installed here).
pub async fn store_url(
    kind: StoreKind,
    dir: &tempfile::TempDir,
) -> Result<Option<(String, Option<Arc<PgServer>>)>> {
    Ok(match kind {
        StoreKind::Sqlite => Some((
            format!("sqlite://{}", dir.path().join("rx.db").display()),
            None,
        )),
        StoreKind::Postgres => match tokio::task::spawn_blocking(shared_pg).await? {
            Some(pg) => Some((pg.fresh_database().await?, Some(pg))),
            None => None,
        },
    })
}

/// Starts a receiver on a fresh store of this kind.
pub async fn start(kind: StoreKind, config: Config) -> Result<Option<Target>> {
    let dir = tempfile::tempdir()?;
    let Some((url, pg)) = store_url(kind, &dir).await? else {
        return Ok(None);
    };
    let rx = spawn(config, &url).await?;
    Ok(Some(Target {
        rx,
        http: Http::new(),
        _dir: dir,
        _pg: pg,
    }))
}

/// A delivery body.
pub struct Delivery {
    pub task_id: String,
    pub key: Option<String>,
    pub status: &'static str,
    pub created_at: String,
    pub test: bool,
    pub resource: Option<(String, u64)>,
}

impl Delivery {
    pub fn completed(task_id: &str, key: &str, created_at: &str) -> Self {
        Delivery {
            task_id: task_id.into(),
            key: Some(key.into()),
            status: "COMPLETED",
            created_at: created_at.into(),
            test: false,
            resource: None,
        }
    }

    pub fn failed(task_id: &str, key: &str, created_at: &str) -> Self {
        Delivery {
            status: "FAILED",
            ..Delivery::completed(task_id, key, created_at)
        }
    }

    pub fn body(&self) -> String {
        let response = if self.status == "COMPLETED" {
            serde_json::json!({"result": {"ok": true}})
        } else {
            serde_json::json!({"error": {"code": "E"}})
        };
        let mut v = serde_json::json!({
            "task": {"id": self.task_id, "idempotencyKey": self.key, "status": self.status, "createdAt": self.created_at},
            "credits": 1,
            "response": response,
        });
        if self.test {
            v["test"] = true.into();
        }
        if let Some((r, s)) = &self.resource {
            v["resource"] = r.clone().into();
            v["sequence"] = (*s).into();
        }
        v.to_string()
    }
}

/// Signature headers for `body`, signed with `secret` at `timestamp`.
pub fn signed(secret: &str, body: &str, webhook_id: &str, timestamp: i64) -> Vec<(String, String)> {
    let mut h = Profile::default_profile()
        .scheme
        .sign(
            &[Secret::new(secret)],
            SignInput {
                id: webhook_id,
                timestamp,
                body: body.as_bytes(),
                url: "",
            },
        )
        .expect("answerline signs with any secret");
    h.push(("Webhook-Id".into(), webhook_id.into()));
    h
}

pub fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// A small HTTP client.
#[derive(Clone)]
pub struct Http {
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
    timeout: Duration,
}

impl Http {
    pub fn new() -> Self {
        Http {
            client: Client::builder(TokioExecutor::new()).build_http(),
            timeout: Duration::from_secs(10),
        }
    }

    /// The same client, waiting up to `timeout` for each answer.
    pub fn with_timeout(self, timeout: Duration) -> Self {
        Http { timeout, ..self }
    }

    /// Sends a request; returns status, headers and body text.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &[(String, String)],
        body: &str,
    ) -> Result<(u16, http::HeaderMap, String)> {
        let mut b = Request::builder().method(method).uri(url);
        for (k, v) in headers {
            b = b.header(k, v);
        }
        let req = b
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_string())))?;
        let resp = tokio::time::timeout(self.timeout, self.client.request(req))
            .await
            .context("request timed out")??;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text =
            String::from_utf8_lossy(&resp.into_body().collect().await?.to_bytes()).into_owned();
        Ok((status, headers, text))
    }

    /// Posts a delivery signed for `secret` to `url`.
    pub async fn deliver(
        &self,
        url: &str,
        secret: &str,
        d: &Delivery,
        webhook_id: &str,
    ) -> Result<u16> {
        let body = d.body();
        let h = signed(secret, &body, webhook_id, now());
        Ok(self.send(Method::POST, url, &h, &body).await?.0)
    }
}

impl Target {
    pub fn url(&self, account: &str) -> String {
        self.rx.webhook_url(account)
    }

    pub fn bearer(&self) -> Vec<(String, String)> {
        vec![(
            "Authorization".into(),
            format!("Bearer {}", self.rx.admin_token),
        )]
    }

    /// Delivers to acct_a, signed with its secret.
    pub async fn deliver(&self, d: &Delivery) -> Result<u16> {
        self.http
            .deliver(
                &self.url("acct_a"),
                SECRET_A,
                d,
                &format!("msg_{}", d.task_id),
            )
            .await
    }

    pub async fn state(&self) -> Result<State> {
        let (status, _, text) = self
            .http
            .send(
                Method::GET,
                &format!("{}/state", self.rx.admin_url()),
                &self.bearer(),
                "",
            )
            .await?;
        if status != 200 {
            bail!("state answered {status}: {text}");
        }
        Ok(serde_json::from_str(&text)?)
    }

    pub async fn reset(&self) -> Result<()> {
        let (status, _, _) = self
            .http
            .send(
                Method::POST,
                &format!("{}/reset", self.rx.admin_url()),
                &self.bearer(),
                "",
            )
            .await?;
        anyhow::ensure!(status == 204, "reset answered {status}");
        Ok(())
    }

    /// Waits until every inbox row is processed.
    pub async fn drained(&self) -> Result<State> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let s = self.state().await?;
            if s.drained() {
                return Ok(s);
            }
            if Instant::now() > deadline {
                bail!("inbox not drained: {s:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Generates one test per store from `async fn name(kind: StoreKind) -> Result<()>`.
#[macro_export]
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() -> anyhow::Result<()> {
                    super::$name($crate::common::StoreKind::Sqlite).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() -> anyhow::Result<()> {
                    super::$name($crate::common::StoreKind::Postgres).await
                }
            )*
        }
    };
}
