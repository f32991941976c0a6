//! `docs/profiles.md`'s provider table, made from the profiles themselves:
//! one row per built-in profile with its signature, its window, its
//! identity, object and order, its verifier and the choices made where the
//! provider's documentation is silent. A test keeps the page equal to it.

use crate::profile::signature::template::Algorithm;
use crate::profile::signature::{Encoding, Scheme};
use crate::profile::{Freshness, Identity, Profile, BUILTIN_NAMES};

/// How a scheme signs, in a line.
pub fn describe_scheme(s: &Scheme) -> String {
    match s {
        Scheme::TimestampedHex { header } => {
            format!("`{header}: t=<unix>,v1=<hex>`, HMAC-SHA256 of `<t>.<body>`")
        }
        Scheme::StandardWebhooks {
            signature_header, ..
        } => format!(
            "`{signature_header}: v1,<base64>`, HMAC-SHA256 of `<id>.<timestamp>.<body>`"
        ),
        Scheme::BodyHmac {
            header,
            prefix,
            encoding,
        } => format!(
            "`{header}: {prefix}<{}>`, HMAC-SHA256 of the body",
            enc(*encoding)
        ),
        Scheme::Slack {
            signature_header, ..
        } => format!("`{signature_header}: v0=<hex>`, HMAC-SHA256 of `v0:<ts>:<body>`"),
        Scheme::Template(t) => {
            let alg = match t.algorithm {
                Algorithm::HmacSha1 => "HMAC-SHA1",
                Algorithm::HmacSha256 => "HMAC-SHA256",
                Algorithm::HmacSha512 => "HMAC-SHA512",
                Algorithm::Ed25519 => "Ed25519",
                Algorithm::EcdsaP256 => "ECDSA P-256",
            };
            let value = t
                .value
                .replace("{signature}", &format!("<{}>", enc(t.encoding)));
            let mut out = format!("`{}: {value}`, {alg} of `{}`", t.header, t.signed);
            if let Some(h) = &t.timestamp_header {
                out.push_str(&format!("; timestamp in `{h}`"));
            }
            if let Some(p) = &t.body_timestamp {
                out.push_str(&format!("; timestamp at `{p}` in the body"));
            }
            if t.algorithm.is_asymmetric() {
                out.push_str(&format!("; public key as {:?}", t.public_key).to_lowercase());
            }
            out
        }
        Scheme::HttpMessageSignature(h) => format!(
            "RFC 9421 `Signature-Input`/`Signature` (`{}`), {} over `@method`, `@target-uri`, `content-digest`",
            h.label,
            h.algorithm.as_str()
        ),
    }
}

fn enc(e: Encoding) -> &'static str {
    match e {
        Encoding::Hex => "hex",
        Encoding::Base64 => "base64",
    }
}

fn statuses(ranges: &[crate::profile::StatusRange]) -> String {
    let one = |r: &crate::profile::StatusRange| match (r.0, r.1) {
        (a, b) if a == b => a.to_string(),
        (a, b) if a % 100 == 0 && b == a + 99 => format!("{}xx", a / 100),
        (a, b) => format!("{a}-{b}"),
    };
    if ranges.is_empty() {
        return "none".into();
    }
    ranges.iter().map(one).collect::<Vec<_>>().join(", ")
}

fn window(p: &Profile) -> String {
    let (_, last) = p.schedule.window();
    let attempts = p.schedule.max_attempts;
    let span = crate::text::units::format_duration(last);
    match attempts {
        1 => "1 attempt, no retry".into(),
        n => format!("{n} attempts over {span}"),
    }
}

/// One section per built-in profile.
pub fn table() -> String {
    let mut s = String::from(
        "| profile | provider | signature | tolerance | attempts | timeout | delivered · final | identity · object · order | body | handshake | official verifier |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut notes = String::new();
    for name in BUILTIN_NAMES {
        let p = Profile::builtin(name).expect("built in");
        let sem = &p.semantics;
        let identity = match &sem.identity {
            Identity::TaskId => "`task.id`".to_string(),
            Identity::DeliveryId => format!(
                "delivery id `{}`",
                p.delivery_id_header().unwrap_or("(none)")
            ),
            Identity::Header(h) => format!("header `{h}`"),
            Identity::Body(ptr) => format!("`{ptr}`"),
        };
        let tolerance = match (p.tolerance_secs(), sem.freshness) {
            (_, Freshness::None) | (None, _) => "none".to_string(),
            (Some(t), Freshness::Both) => format!("±{t} s"),
            (Some(t), Freshness::PastOnly) => format!("{t} s, past only"),
        };
        let body = match (&p.body_template, p.body_format) {
            (_, crate::profile::BodyFormat::Form) => "form parameters".to_string(),
            (Some(_), _) => "JSON, the provider's own".to_string(),
            (None, _) => format!("JSON, {:?} shape", p.body).to_lowercase(),
        };
        s.push_str(&format!(
            "| `{name}` | {} | {} | {tolerance} | {} | {} s | {} · {} | {identity} · `{}` · `{}` | {body} | {} | {} |\n",
            if p.about.provider.is_empty() { "-" } else { &p.about.provider },
            describe_scheme(&p.scheme),
            window(&p),
            p.timeout.as_secs(),
            statuses(&p.success),
            statuses(&p.give_up_on),
            sem.object.as_deref().unwrap_or("-"),
            sem.order.as_deref().unwrap_or("-"),
            p.about.handshake.as_deref().unwrap_or("none"),
            p.about.verifier.as_deref().unwrap_or("none"),
        ));
        for n in &p.about.notes {
            notes.push_str(&format!("- `{name}`: {n}\n"));
        }
    }
    s.push_str("\nWhat the providers' documentation leaves out, and what hookstorm chose:\n\n");
    s.push_str(&notes);
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_provider_table_in_the_docs_is_made_from_the_profiles() {
        crate::docs_table::assert_section(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/profiles.md"),
            "providers",
            &super::table(),
        );
    }

    #[test]
    fn there_are_at_least_twenty_built_in_profiles_each_loading() {
        assert!(crate::profile::BUILTIN_NAMES.len() >= 20);
        for name in crate::profile::BUILTIN_NAMES {
            let p = crate::profile::Profile::builtin(name).unwrap();
            assert_eq!(p.name, name);
            assert!(!p.about.provider.is_empty(), "{name}: says who it is");
        }
    }
}
