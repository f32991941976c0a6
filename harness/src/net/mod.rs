//! The harness's own networking beside the sender: https for the sender
//! and the probe ([`tls`]), the TCP fault proxy before a receiver's
//! database ([`tcpproxy`]), the small HTTP server loop the provider API and
//! the fault front share ([`httpd`]), and HTTP/1.1 answers read off any
//! stream ([`httpwire`]: the one reader of the concurrent copies and the
//! bench). Leaves: none of them imports a stage of the pipeline.

pub mod httpd;
pub(crate) mod httpwire;
pub mod tcpproxy;
pub mod tls;
