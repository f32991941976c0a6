//! `hookstorm proxy`: the TCP fault proxy on its own, for people who want to
//! cut a database (or any TCP service) in their own tests.
//!
//! Point the receiver's connection string at `--listen`; switch modes with
//! `curl -X POST http://CONTROL/mode -d '{"mode":"refuse"}'` (modes: pass,
//! refuse, reset, blackhole, latency with `latency_ms`); `GET /mode` and
//! `GET /stats` read it back. Runs until Ctrl-C.

use std::sync::Arc;

use anyhow::Context;
use hookstorm::net::tcpproxy::{control, Proxy};

/// Arguments of `hookstorm proxy`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where the proxy listens (the receiver connects here).
    #[arg(long, value_name = "ADDR")]
    listen: String,
    /// The real service, e.g. 127.0.0.1:5432.
    #[arg(long, value_name = "ADDR")]
    upstream: String,
    /// Where the control API listens.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7070")]
    control: String,
}

/// Runs the proxy until Ctrl-C.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let proxy = Proxy::start(&args.listen, &args.upstream)
            .await
            .with_context(|| format!("binding {}", args.listen))?;
        let ctl = tokio::net::TcpListener::bind(&args.control)
            .await
            .with_context(|| format!("binding {}", args.control))?;
        outln!(
            "proxy:   {} -> {} (mode pass)",
            proxy.local_addr(),
            proxy.upstream()
        );
        outln!("control: http://{}/mode", ctl.local_addr()?);
        let proxy = Arc::new(proxy);
        tokio::select! {
            _ = control::serve(proxy.clone(), ctl) => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        Ok(hookstorm::exit::PASS)
    })
}
