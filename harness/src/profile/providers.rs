//! The built-in providers written as profile files (`providers/*.toml`):
//! each is what a user could write, `extends` and all, so every built-in
//! scheme is one a user's profile file can express.

/// Each provider profile's name and file text, in the order they are listed.
pub const FILES: [(&str, &str); 14] = [
    ("twilio", include_str!("providers/twilio.toml")),
    ("square", include_str!("providers/square.toml")),
    ("paddle", include_str!("providers/paddle.toml")),
    ("linear", include_str!("providers/linear.toml")),
    ("zoom", include_str!("providers/zoom.toml")),
    ("discord", include_str!("providers/discord.toml")),
    (
        "standard-webhooks-v1a",
        include_str!("providers/standard-webhooks-v1a.toml"),
    ),
    (
        "http-signatures-ed25519",
        include_str!("providers/http-signatures-ed25519.toml"),
    ),
    (
        "http-signatures-es256",
        include_str!("providers/http-signatures-es256.toml"),
    ),
    ("sendgrid", include_str!("providers/sendgrid.toml")),
    ("twitch", include_str!("providers/twitch.toml")),
    ("hubspot", include_str!("providers/hubspot.toml")),
    ("intercom", include_str!("providers/intercom.toml")),
    ("mailgun", include_str!("providers/mailgun.toml")),
];

/// The file text of the provider profile `name`.
pub fn file(name: &str) -> Option<&'static str> {
    FILES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}
