//! Where the receiver listens: an address it binds (`127.0.0.1:8080`, port
//! 0 for any free one), or a socket it inherited already listening
//! (`fd:3`, as systemd's socket activation hands them out).
//!
//! With `reuse_port` (`--reuse-port`) an address is bound with
//! `SO_REUSEPORT`: that is how a supervisor that kills and restarts the
//! receiver keeps its port without holding connections. The supervisor
//! reserves the port with a bound socket that never listens (so nothing
//! else can take it, and while the receiver is down connections are
//! refused as they would be), and every start of the receiver binds the
//! same port beside it. Descriptors and `SO_REUSEPORT` are Unix; elsewhere
//! they are refused with a clear error.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

use tokio::net::TcpListener;

/// A `--listen` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    /// Bind this address.
    Addr(SocketAddr),
    /// Serve on this inherited, already listening descriptor.
    Fd(i32),
}

impl fmt::Display for Listen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Listen::Addr(a) => write!(f, "{a}"),
            Listen::Fd(n) => write!(f, "fd:{n}"),
        }
    }
}

/// A `--listen` value that is neither an address nor `fd:N`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad listen value {0:?} (hint: an address like 127.0.0.1:8080, or fd:3 for an inherited socket)")]
pub struct BadListen(pub String);

impl FromStr for Listen {
    type Err = BadListen;
    fn from_str(s: &str) -> Result<Listen, BadListen> {
        let s = s.trim();
        if let Some(n) = s.strip_prefix("fd:") {
            return match n.parse::<i32>() {
                Ok(n) if n >= 3 => Ok(Listen::Fd(n)),
                _ => Err(BadListen(s.to_string())),
            };
        }
        s.parse()
            .map(Listen::Addr)
            .map_err(|_| BadListen(s.to_string()))
    }
}

impl Listen {
    /// The listener: bound now (with `SO_REUSEPORT` when `reuse_port`), or
    /// taken over from the inherited descriptor.
    pub async fn bind(self, reuse_port: bool) -> std::io::Result<TcpListener> {
        match self {
            Listen::Addr(a) if reuse_port => bind_reusing_port(a),
            Listen::Addr(a) => TcpListener::bind(a).await,
            Listen::Fd(n) => inherited(n),
        }
    }
}

#[cfg(all(unix, not(any(target_os = "solaris", target_os = "illumos"))))]
fn bind_reusing_port(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.set_reuseport(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

#[cfg(not(all(unix, not(any(target_os = "solaris", target_os = "illumos")))))]
fn bind_reusing_port(addr: SocketAddr) -> std::io::Result<TcpListener> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("{addr}: --reuse-port needs SO_REUSEPORT (Linux, the BSDs, macOS)"),
    ))
}

#[cfg(unix)]
fn inherited(fd: i32) -> std::io::Result<TcpListener> {
    use std::os::fd::FromRawFd;
    // SAFETY: the descriptor was handed to this process to serve on, and
    // nothing else in it uses it; ownership passes to the listener.
    let std = unsafe { std::net::TcpListener::from_raw_fd(fd) };
    // A descriptor that is not a listening TCP socket fails here, clearly.
    std.local_addr().map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("fd {fd} is not an inherited listening socket: {e}"),
        )
    })?;
    std.set_nonblocking(true)?;
    TcpListener::from_std(std)
}

#[cfg(not(unix))]
fn inherited(fd: i32) -> std::io::Result<TcpListener> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("fd:{fd}: inherited sockets need a Unix platform (hint: give an address)"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_descriptors_parse_and_anything_else_gets_a_hint() {
        assert_eq!(
            "127.0.0.1:0".parse::<Listen>().unwrap(),
            Listen::Addr("127.0.0.1:0".parse().unwrap())
        );
        assert_eq!("fd:3".parse::<Listen>().unwrap(), Listen::Fd(3));
        for bad in ["fd:1", "fd:x", "localhost", ""] {
            let e = bad.parse::<Listen>().unwrap_err().to_string();
            assert!(e.contains("hint: "), "{e}");
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn an_inherited_descriptor_that_is_no_socket_is_refused() {
        use std::os::fd::IntoRawFd;
        let file = tempfile::tempfile().unwrap();
        let fd = file.into_raw_fd();
        let e = Listen::Fd(fd).bind(false).await.unwrap_err().to_string();
        assert!(e.contains("not an inherited listening socket"), "{e}");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn an_inherited_listening_socket_is_served_on_its_port() {
        use std::os::fd::IntoRawFd;
        let std = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = std.local_addr().unwrap();
        let l = Listen::Fd(std.into_raw_fd()).bind(false).await.unwrap();
        assert_eq!(l.local_addr().unwrap(), addr);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_port_reserved_by_a_socket_that_never_listens_is_served_beside_it() {
        let reserved = tokio::net::TcpSocket::new_v4().unwrap();
        reserved.set_reuseport(true).unwrap();
        reserved.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = reserved.local_addr().unwrap();
        // Reserved and not listening: refused, and not bindable plainly.
        assert!(std::net::TcpStream::connect(addr).is_err());
        assert!(Listen::Addr(addr).bind(false).await.is_err());
        let l = Listen::Addr(addr).bind(true).await.unwrap();
        assert_eq!(l.local_addr().unwrap(), addr);
        let (_c, _) = tokio::join!(tokio::net::TcpStream::connect(addr), l.accept());
        drop(l);
        // Its listener gone, the port refuses again and stays reserved.
        assert!(std::net::TcpStream::connect(addr).is_err());
        assert!(Listen::Addr(addr).bind(false).await.is_err());
    }
}
