//! Just enough of the Postgres wire protocol to see a save committed.
//!
//! The proxy can time a crash on what the database told its client: the
//! moment a transaction that wrote rows is committed, before the client
//! reads that news and goes on (enqueues, POSTs, answers). A sender that
//! saves an event and then hands it to a queue outside that transaction
//! loses it when it dies exactly there, and no kill timed from outside the
//! database can aim at that gap.
//!
//! The scan reads the server's messages (a type byte and a length) and
//! remembers whether the current transaction inserted rows (a
//! `CommandComplete` of `INSERT`, `MERGE` or `COPY` with rows; a
//! `ROLLBACK` forgets them); the `ReadyForQuery` that follows with the
//! session idle (`I`) is their commit. Updates and deletes are not saves:
//! a delivery worker marking rows sent is not what a crash here aims at. From the client it reads only the start: an
//! `SSLRequest` or `GSSENCRequest` is answered by one bare byte, and an
//! encrypted session (answer `S` or `G`) cannot be read at all, so the
//! scan then stops and sees nothing.

/// The request codes of `SSLRequest` and `GSSENCRequest`.
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;

/// The most bytes one message may claim before the scan gives up on the
/// stream (a bad length would otherwise swallow everything after it).
const MAX_MESSAGE: u32 = 1 << 30;

/// The scan of one connection.
#[derive(Debug, Default)]
pub struct PgScan {
    /// The client's start-up messages are still coming (no type byte).
    client_started: bool,
    client_buf: Vec<u8>,
    /// Bare one-byte answers the server owes (to SSL or GSS requests).
    bare_answers: u32,
    /// Encrypted or unreadable: nothing more is scanned.
    blind: bool,
    server_buf: Vec<u8>,
    /// The open transaction (or the statement, outside one) inserted rows.
    inserted: bool,
}

impl PgScan {
    /// Bytes the client sent.
    pub fn client(&mut self, bytes: &[u8]) {
        if self.client_started || self.blind {
            return;
        }
        self.client_buf.extend_from_slice(bytes);
        while !self.client_started && self.client_buf.len() >= 8 {
            let len = u32::from_be_bytes(self.client_buf[0..4].try_into().unwrap_or_default());
            let code = u32::from_be_bytes(self.client_buf[4..8].try_into().unwrap_or_default());
            if len == 8 && (code == SSL_REQUEST || code == GSSENC_REQUEST) {
                self.bare_answers += 1;
                self.client_buf.drain(..8);
            } else {
                // The start-up message (or a cancel request): typed
                // messages follow, and the scan needs none of them.
                self.client_started = true;
                self.client_buf = Vec::new();
            }
        }
    }

    /// Bytes the server sent; true when they hold the commit of a save.
    pub fn server(&mut self, bytes: &[u8]) -> bool {
        if self.blind {
            return false;
        }
        self.server_buf.extend_from_slice(bytes);
        let mut committed = false;
        let mut at = 0;
        loop {
            let rest = &self.server_buf[at..];
            if self.bare_answers > 0 {
                let Some(&b) = rest.first() else { break };
                if b != b'N' {
                    // TLS or GSS encryption accepted (or an error): unreadable.
                    self.blind = true;
                    self.server_buf = Vec::new();
                    return committed;
                }
                self.bare_answers -= 1;
                at += 1;
                continue;
            }
            if rest.len() < 5 {
                break;
            }
            let kind = rest[0];
            let len = u32::from_be_bytes(rest[1..5].try_into().unwrap_or_default());
            if !(4..=MAX_MESSAGE).contains(&len) {
                self.blind = true;
                self.server_buf = Vec::new();
                return committed;
            }
            let whole = 1 + len as usize;
            if rest.len() < whole {
                break;
            }
            let body = &rest[5..whole];
            match kind {
                b'C' => match tag_of(body) {
                    Tag::Inserted => self.inserted = true,
                    Tag::RolledBack => self.inserted = false,
                    Tag::Other => {}
                },
                b'Z' if body.first() == Some(&b'I') => {
                    committed |= self.inserted;
                    self.inserted = false;
                }
                _ => {}
            }
            at += whole;
        }
        self.server_buf.drain(..at);
        committed
    }
}

/// What a `CommandComplete` tag (`INSERT 0 1`, `ROLLBACK`, …) says.
enum Tag {
    /// Rows were inserted.
    Inserted,
    /// The transaction was rolled back.
    RolledBack,
    /// Anything else.
    Other,
}

fn tag_of(tag: &[u8]) -> Tag {
    let tag = tag.strip_suffix(&[0]).unwrap_or(tag);
    let text = String::from_utf8_lossy(tag);
    let verb = text.split_whitespace().next().unwrap_or("");
    let rows = text
        .split_whitespace()
        .last()
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    match verb {
        "ROLLBACK" => Tag::RolledBack,
        "INSERT" | "MERGE" | "COPY" if rows > 0 => Tag::Inserted,
        _ => Tag::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![kind];
        v.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    fn complete(tag: &str) -> Vec<u8> {
        msg(b'C', format!("{tag}\0").as_bytes())
    }

    fn ready(status: u8) -> Vec<u8> {
        msg(b'Z', &[status])
    }

    fn startup() -> Vec<u8> {
        let mut v = 9u32.to_be_bytes().to_vec();
        v.extend_from_slice(&196_608u32.to_be_bytes());
        v.push(0);
        v
    }

    #[test]
    fn an_autocommitted_insert_is_a_save_and_reads_updates_and_empty_inserts_are_not() {
        let mut s = PgScan::default();
        s.client(&startup());
        assert!(!s.server(&[msg(b'R', &[0, 0, 0, 0]), ready(b'I')].concat()));
        assert!(!s.server(&[complete("SELECT 3"), ready(b'I')].concat()));
        assert!(!s.server(&[complete("UPDATE 4"), ready(b'I')].concat()));
        assert!(!s.server(&[complete("INSERT 0 0"), ready(b'I')].concat()));
        assert!(s.server(&[complete("INSERT 0 1"), ready(b'I')].concat()));
    }

    #[test]
    fn inside_a_transaction_only_the_commit_counts() {
        let mut s = PgScan::default();
        s.client(&startup());
        assert!(!s.server(&[complete("BEGIN"), ready(b'T')].concat()));
        assert!(!s.server(&[complete("INSERT 0 2"), ready(b'T')].concat()));
        assert!(!s.server(&[complete("UPDATE 1"), ready(b'T')].concat()));
        assert!(s.server(&[complete("COMMIT"), ready(b'I')].concat()));
        // A transaction of updates only saves nothing.
        assert!(!s.server(&[complete("BEGIN"), complete("UPDATE 1"), ready(b'T')].concat()));
        assert!(!s.server(&[complete("COMMIT"), ready(b'I')].concat()));
        // A rolled-back write commits nothing.
        assert!(!s.server(&[complete("INSERT 0 1"), ready(b'T')].concat()));
        assert!(!s.server(&[complete("ROLLBACK"), ready(b'I')].concat()));
    }

    #[test]
    fn messages_split_anywhere_across_reads_are_still_seen() {
        let mut s = PgScan::default();
        s.client(&startup());
        let bytes = [
            msg(b'1', &[]),
            msg(b'2', &[]),
            complete("INSERT 0 1"),
            ready(b'I'),
        ]
        .concat();
        for cut in 1..bytes.len() {
            let mut s2 = PgScan::default();
            s2.client(&startup());
            let first = s2.server(&bytes[..cut]);
            let second = s2.server(&bytes[cut..]);
            assert!(!first && second, "cut at {cut}");
        }
        assert!(s.server(&bytes));
    }

    #[test]
    fn a_refused_ssl_request_is_skipped_and_an_accepted_one_blinds_the_scan() {
        let mut s = PgScan::default();
        let ssl = [8u32.to_be_bytes(), SSL_REQUEST.to_be_bytes()].concat();
        s.client(&ssl);
        s.client(&startup());
        assert!(s.server(&[b"N".to_vec(), complete("INSERT 0 1"), ready(b'I')].concat()));
        let mut t = PgScan::default();
        t.client(&ssl);
        assert!(!t.server(&[b"S".to_vec(), complete("INSERT 0 1"), ready(b'I')].concat()));
        assert!(!t.server(&[complete("INSERT 0 1"), ready(b'I')].concat()));
    }

    #[test]
    fn a_garbage_length_blinds_the_scan_instead_of_swallowing_the_stream() {
        let mut s = PgScan::default();
        s.client(&startup());
        assert!(!s.server(&[b'C', 0xff, 0xff, 0xff, 0xff]));
        assert!(!s.server(&[complete("INSERT 0 1"), ready(b'I')].concat()));
    }
}
