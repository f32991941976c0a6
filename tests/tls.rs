//! https targets: the sender and the state probe speak TLS, trust the web
//! roots plus the target's `ca_cert`, and refuse a certificate nobody vouches
//! for.

use std::sync::Arc;

use hookstorm::history::{self, Event};
use hookstorm::net::tls::TrustedRoots;
use tokio::net::TcpListener;

use crate::common::*;

/// A TLS terminator on 127.0.0.1 that forwards every connection to `upstream`.
async fn tls_front(upstream: std::net::SocketAddr) -> (std::net::SocketAddr, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let pem = cert.pem();
    let der = rustls_pki_types::CertificateDer::from(cert.der().to_vec());
    let key_der = rustls_pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![der], key_der)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut up) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
            });
        }
    });
    (addr, pem)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_receiver_is_tested_when_its_ca_is_trusted_and_refused_otherwise() -> TestResult {
    let (receiver, mut target) = hookstorm_cli::builtin::start(None, None).await?;
    let (front, pem) = tls_front(receiver.webhook_addr()).await;
    let dir = tempfile::tempdir()?;
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, pem)?;
    target.url = format!("https://localhost:{}/webhooks/{{account}}", front.port());

    target.roots = TrustedRoots::load_pem(&ca)?;
    let out = dir.path().join("trusted");
    let ok = hookstorm::run::run(
        &target,
        &scenarios(&["baseline"]),
        &options(4, &out, true),
        &mut |_| {},
    )
    .await?;
    assert!(
        non_passing(&ok.report).is_empty(),
        "{:?}",
        non_passing(&ok.report)
    );
    assert_eq!(ok.report.exit_code(), hookstorm::exit::PASS);

    target.roots = TrustedRoots::default();
    let out = dir.path().join("untrusted");
    let mut opts = options(4, &out, true);
    opts.time_scale = Some(5000.0);
    let refused =
        hookstorm::run::run(&target, &scenarios(&["baseline"]), &opts, &mut |_| {}).await?;
    receiver.shutdown().await;
    let mut attempts = 0;
    for e in history::read(&refused.dir.join("baseline/history.jsonl"))? {
        if let Event::Attempt(a) = e? {
            attempts += 1;
            assert_eq!(
                a.status, None,
                "no answer can come through an untrusted certificate"
            );
            let err = a.error.unwrap_or_default().to_lowercase();
            assert!(
                err.contains("certificate") || err.contains("unknownissuer"),
                "{err}"
            );
        }
    }
    assert!(attempts > 0);
    Ok(())
}

/// `run`, `bench` and `merge` build their state probe one way
/// (`Target::probe`), so a state endpoint behind https on a private CA is
/// read by each of them once the target file names the CA.
#[test]
fn an_https_state_endpoint_on_a_private_ca_is_read_by_run_bench_and_merge() -> TestResult {
    use crate::shard::{bench_args, hookstorm, merge, start_receiver};
    let dir = tempfile::tempdir()?;
    let receiver = start_receiver(dir.path())?;
    let admin = receiver.admin_addr();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let (front, pem) = rt.block_on(tls_front(admin));
    std::fs::write(dir.path().join("ca.pem"), pem)?;
    let plain = std::fs::read_to_string(&receiver.target)?;
    let http_state = format!("http://127.0.0.1:{}/state", admin.port());
    assert!(plain.contains(&http_state), "{plain}");
    let https = plain.replace(
        &http_state,
        &format!("https://localhost:{}/state", front.port()),
    );
    let target = dir.path().join("https.toml");
    std::fs::write(&target, format!("ca_cert = \"ca.pem\"\n{https}"))?;
    let t = target.display().to_string();

    let o = hookstorm(
        &[
            "run",
            "--target",
            &t,
            "--scenario-dir",
            &scenario_dir_arg(),
            "--scenario",
            "baseline",
            "--seed",
            "3",
            "--out",
            "runs",
        ]
        .map(String::from),
        dir.path(),
    )
    .output()?;
    assert_eq!(o.status.code(), Some(0), "run: {}", output_text(&o));

    let o = hookstorm(&bench_args(&target, "100/s", "bench"), dir.path()).output()?;
    assert_eq!(o.status.code(), Some(0), "bench: {}", output_text(&o));
    let bench: serde_json::Value = serde_json::from_slice(&o.stdout)?;
    assert_eq!(bench["check"]["verdict"], "pass", "bench: {bench}");

    let mut args = bench_args(&target, "100/s", "shards");
    args.extend(["--shard".into(), "0/1".into()]);
    let o = hookstorm(&args, dir.path()).output()?;
    assert_eq!(o.status.code(), Some(0), "bench shard: {}", output_text(&o));
    let (o, merged) = merge(dir.path(), &[dir.path().join("shards")], &target);
    assert_eq!(o.status.code(), Some(0), "merge: {}", output_text(&o));
    assert_eq!(merged["verdict"], "pass", "{merged}");
    Ok(())
}

#[test]
fn a_ca_file_without_certificates_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("empty.pem");
    std::fs::write(&p, "not a certificate\n").unwrap();
    let e = TrustedRoots::load_pem(&p).unwrap_err().to_string();
    assert!(e.contains("empty.pem") && e.contains("certificate"), "{e}");
}
