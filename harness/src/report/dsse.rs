//! Ed25519 keys and DSSE envelopes: what signs a report folder's seal.
//!
//! A seal (`SHA256SUMS`) shows a folder is consistent, not who wrote it:
//! anyone can rebuild it. A signature by a key only its holder has shows
//! the origin. The envelope is the Dead Simple Signing Envelope
//! (<https://github.com/secure-systems-lab/dsse>) existing supply-chain
//! tooling reads (`cosign verify-blob-attestation`, in-toto verifiers):
//! `{payloadType, payload, signatures: [{keyid, sig}]}`, the signature
//! taken over DSSE's pre-authentication encoding ([`pae`]) of the payload
//! type and the payload's bytes, never over the JSON.
//!
//! Keys are the formats `openssl` writes and reads: the private key a
//! PKCS#8 document, PEM-armoured (`-----BEGIN PRIVATE KEY-----`) or bare
//! base64 (what a CI secret holds on one line); the public key a
//! SubjectPublicKeyInfo in PEM (`-----BEGIN PUBLIC KEY-----`). A key's id
//! is the SHA-256 of its public key's DER, in hex (`openssl pkey -pubin
//! -outform DER | sha256sum`). Nothing here prints or logs a private key:
//! [`SigningKey`]'s `Debug` shows its id alone.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ring::signature::{Ed25519KeyPair, KeyPair, UnparsedPublicKey, ED25519};
use serde::{Deserialize, Serialize};

/// The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): the
/// 32 bytes of the key follow it.
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The DER of an Ed25519 private key in PKCS#8 v1 (RFC 8410) before its
/// 32-byte seed.
const PKCS8_V1_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// DSSE's pre-authentication encoding: `DSSEv1 LEN(type) type LEN(body)
/// body`, lengths in ASCII decimal, one space between. The signature is
/// over these bytes, so a payload cannot be passed off as another type.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// One signature of an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvelopeSignature {
    /// The id of the key that made it ([`PublicKey::keyid`]).
    #[serde(default)]
    pub keyid: String,
    /// The signature, base64.
    pub sig: String,
}

/// A DSSE envelope, as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// The payload, base64 (standard alphabet, padded).
    pub payload: String,
    /// What the payload is (`application/vnd.in-toto+json`).
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// The signatures over [`pae`] of the two.
    pub signatures: Vec<EnvelopeSignature>,
}

/// A key could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Not base64 (inside its PEM armour, if any).
    #[error("{what}: not PEM or base64: {why}")]
    Encoding {
        /// Which key (a file, a variable).
        what: String,
        /// What is wrong.
        why: String,
    },
    /// Decoded, but not a key of the kind expected.
    #[error("{what}: not an Ed25519 {kind} key ({why}) (hint: make a pair with `hookstorm keygen`, or `openssl genpkey -algorithm ed25519`)")]
    NotAKey {
        /// Which key.
        what: String,
        /// `private` or `public`.
        kind: &'static str,
        /// What is wrong.
        why: String,
    },
    /// The key file could not be read.
    #[error("{what}: {why}")]
    Unreadable {
        /// The file.
        what: String,
        /// Why.
        why: String,
    },
    /// Making a key failed.
    #[error("could not make a key: {0}")]
    Generate(String),
}

/// An envelope whose signature does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The envelope is not one (bad base64, no signature).
    #[error("not a DSSE envelope: {0}")]
    Malformed(String),
    /// No signature verifies with the key given.
    #[error("no signature holds for the key given ({given}); signed by {signed}")]
    OtherKey {
        /// The key given's id.
        given: String,
        /// The ids the envelope names.
        signed: String,
    },
}

/// The base64 inside `text`'s PEM armour `-----BEGIN {label}-----`, or
/// the whole text when it has none, decoded.
fn unarmour(text: &str, label: &str, what: &str) -> Result<Vec<u8>, KeyError> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let body = match text.find(&begin) {
        Some(at) => {
            let rest = &text[at + begin.len()..];
            let stop = rest.find(&end).ok_or_else(|| KeyError::Encoding {
                what: what.into(),
                why: format!("no {end} line"),
            })?;
            &rest[..stop]
        }
        None if text.contains("-----BEGIN ") => {
            return Err(KeyError::Encoding {
                what: what.into(),
                why: format!("expected {begin}"),
            })
        }
        None => text,
    };
    let clean: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD
        .decode(clean.as_bytes())
        .map_err(|e| KeyError::Encoding {
            what: what.into(),
            why: e.to_string(),
        })
}

/// `der` in PEM with `label`, 64 characters a line.
fn armour(der: &[u8], label: &str) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// An Ed25519 public key.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    raw: [u8; 32],
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.keyid())
    }
}

impl PublicKey {
    /// Reads a public key in PEM (`-----BEGIN PUBLIC KEY-----`) or the
    /// bare base64 of its DER; `what` names it in errors.
    pub fn from_pem(text: &str, what: &str) -> Result<Self, KeyError> {
        let der = unarmour(text, "PUBLIC KEY", what)?;
        let raw = der
            .strip_prefix(&SPKI_PREFIX[..])
            .and_then(|k| <[u8; 32]>::try_from(k).ok())
            .ok_or_else(|| KeyError::NotAKey {
                what: what.into(),
                kind: "public",
                why: format!(
                    "{} bytes of DER, not the 44 of an Ed25519 SubjectPublicKeyInfo",
                    der.len()
                ),
            })?;
        Ok(PublicKey { raw })
    }

    /// Its SubjectPublicKeyInfo, DER.
    pub fn to_der(&self) -> Vec<u8> {
        [&SPKI_PREFIX[..], &self.raw[..]].concat()
    }

    /// Its PEM, as `openssl pkey -pubout` writes it.
    pub fn to_pem(&self) -> String {
        armour(&self.to_der(), "PUBLIC KEY")
    }

    /// Its id: the SHA-256 of its DER, in hex.
    pub fn keyid(&self) -> String {
        super::seal::sha256_hex(&self.to_der())
    }

    /// The payload of `env` when one of its signatures holds for this key.
    pub fn open(&self, env: &Envelope) -> Result<Vec<u8>, SignatureError> {
        let payload = STANDARD
            .decode(env.payload.as_bytes())
            .map_err(|e| SignatureError::Malformed(format!("payload: {e}")))?;
        if env.signatures.is_empty() {
            return Err(SignatureError::Malformed("no signature".into()));
        }
        let message = pae(&env.payload_type, &payload);
        let key = UnparsedPublicKey::new(&ED25519, &self.raw[..]);
        let holds = env.signatures.iter().any(|s| {
            STANDARD
                .decode(s.sig.as_bytes())
                .is_ok_and(|sig| key.verify(&message, &sig).is_ok())
        });
        if holds {
            return Ok(payload);
        }
        let ids: Vec<&str> = env.signatures.iter().map(|s| s.keyid.as_str()).collect();
        Err(SignatureError::OtherKey {
            given: self.keyid(),
            signed: if ids.iter().all(|i| i.is_empty()) {
                "a key it does not name".into()
            } else {
                ids.join(", ")
            },
        })
    }
}

/// An Ed25519 private key. Its `Debug` shows the key's id, never the key.
pub struct SigningKey {
    pair: Ed25519KeyPair,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({})", self.public().keyid())
    }
}

impl SigningKey {
    /// A new key, and its PKCS#8 document in PEM (for the key file): the
    /// RFC 8410 form (v1, the seed alone) that `openssl` and other tools
    /// read, not ring's v2 with the public key, which OpenSSL 3.0 refuses.
    pub fn generate() -> Result<(SigningKey, String), KeyError> {
        use ring::rand::SecureRandom as _;
        let mut doc = PKCS8_V1_PREFIX.to_vec();
        let mut seed = [0u8; 32];
        ring::rand::SystemRandom::new()
            .fill(&mut seed)
            .map_err(|e| KeyError::Generate(e.to_string()))?;
        doc.extend_from_slice(&seed);
        let pem = armour(&doc, "PRIVATE KEY");
        let key = SigningKey::from_pem(&pem, "the new key")?;
        Ok((key, pem))
    }

    /// Reads a PKCS#8 private key, PEM or bare base64 (v1, as `openssl
    /// genpkey` writes it, or v2 with the public key, as `keygen` does);
    /// `what` names it in errors (the error never quotes the key).
    pub fn from_pem(text: &str, what: &str) -> Result<Self, KeyError> {
        let der = unarmour(text, "PRIVATE KEY", what)?;
        let pair =
            Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der).map_err(|e| KeyError::NotAKey {
                what: what.into(),
                kind: "private",
                why: e.to_string(),
            })?;
        Ok(SigningKey { pair })
    }

    /// Its public key.
    pub fn public(&self) -> PublicKey {
        let mut raw = [0u8; 32];
        raw.copy_from_slice(self.pair.public_key().as_ref());
        PublicKey { raw }
    }

    /// `payload` of `payload_type`, signed, in an envelope.
    pub fn seal(&self, payload_type: &str, payload: &[u8]) -> Envelope {
        let sig = self.pair.sign(&pae(payload_type, payload));
        Envelope {
            payload: STANDARD.encode(payload),
            payload_type: payload_type.to_string(),
            signatures: vec![EnvelopeSignature {
                keyid: self.public().keyid(),
                sig: STANDARD.encode(sig.as_ref()),
            }],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_is_the_encoding_the_dsse_spec_gives() {
        // The example of the DSSE protocol document.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
        assert_eq!(pae("", b""), b"DSSEv1 0  0 ".to_vec());
        // Lengths are of bytes, not characters.
        assert_eq!(
            pae("t", "é".as_bytes()),
            "DSSEv1 1 t 2 é".as_bytes().to_vec()
        );
    }

    #[test]
    fn an_envelope_opens_with_its_key_after_a_json_round_trip_and_with_no_other() {
        let (key, pem) = SigningKey::generate().unwrap();
        let env = key.seal("application/vnd.in-toto+json", b"{\"a\":1}");
        let json = serde_json::to_string(&env).unwrap();
        assert!(json.contains("\"payloadType\":\"application/vnd.in-toto+json\""));
        assert!(!json.contains(pem.lines().nth(1).unwrap()), "{json}");
        let back: Envelope = serde_json::from_str(&json).unwrap();
        assert_eq!(back, env);
        let public = PublicKey::from_pem(&key.public().to_pem(), "pub").unwrap();
        assert_eq!(public.open(&back).unwrap(), b"{\"a\":1}");
        assert_eq!(back.signatures[0].keyid, public.keyid());

        let (other, _) = SigningKey::generate().unwrap();
        let e = other.public().open(&back).unwrap_err();
        assert!(matches!(e, SignatureError::OtherKey { .. }), "{e}");
        // Another payload, or another type, under the same signature.
        let mut forged = back.clone();
        forged.payload = STANDARD.encode(b"{\"a\":2}");
        assert!(public.open(&forged).is_err());
        let mut retyped = back;
        retyped.payload_type = "text/plain".into();
        assert!(public.open(&retyped).is_err());
    }

    #[test]
    fn keys_read_as_pem_or_bare_base64_and_a_private_key_never_shows_in_debug() {
        let (key, pem) = SigningKey::generate().unwrap();
        let bare: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        // The form `openssl genpkey -algorithm ed25519` writes.
        assert!(bare.starts_with("MC4CAQAwBQYDK2VwBCIEI"), "not PKCS#8 v1");
        assert_ne!(SigningKey::generate().unwrap().1, pem, "two keys alike");
        let again = SigningKey::from_pem(&bare, "HOOKSTORM_SIGNING_KEY").unwrap();
        assert_eq!(again.public(), key.public());
        let one_line = pem.replace('\n', " ");
        assert_eq!(
            SigningKey::from_pem(&one_line, "k").unwrap().public(),
            key.public()
        );
        assert!(!format!("{key:?}").contains(&bare[..20]));
        // A public key is no private key, and the error does not quote it.
        let e = SigningKey::from_pem(&key.public().to_pem(), "k").unwrap_err();
        assert!(
            e.to_string()
                .contains("expected -----BEGIN PRIVATE KEY-----"),
            "{e}"
        );
        let e = PublicKey::from_pem("not base64!", "pub.pem").unwrap_err();
        assert!(
            e.to_string().starts_with("pub.pem: not PEM or base64"),
            "{e}"
        );
        // An openssl-made key (PKCS#8 v1: no public key inside).
        let v1 = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n-----END PRIVATE KEY-----\n";
        let k = SigningKey::from_pem(v1, "openssl").unwrap();
        assert_eq!(
            k.public().to_pem(),
            "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n"
        );
    }
}
