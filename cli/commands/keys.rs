//! `hookstorm keygen`: a vendor's signing key pair, and the signing the
//! commands that write report folders share.
//!
//! `keygen` writes the private key (PKCS#8 PEM, readable by its owner
//! only, never printed) for the pipeline's secret `HOOKSTORM_SIGNING_KEY`,
//! and the public key (PEM) a recipient gives to `verify --key`. `run`,
//! `sink`, `merge`, `bench` and `check --partition` read the key from the
//! environment before they start ([`signing_key`]: a key that is no key is
//! a usage error then, not after the run) and sign their folder at the end
//! ([`sign`]).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use hookstorm::report::attest::{self, Predicate, KEY_ENV};
use hookstorm::report::dsse::SigningKey;

/// Arguments of `hookstorm keygen`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where the private key goes (made new, readable by you alone; it
    /// is the pipeline's secret, never handed over).
    #[arg(long, default_value = "hookstorm-signing.key")]
    out: PathBuf,
    /// Where the public key goes (default: the private key's path with
    /// `.pub` added): what you hand over, for `verify --key`.
    #[arg(long)]
    public: Option<PathBuf>,
}

/// Writes a new key pair; prints the public key and its id.
pub fn keygen(args: Args) -> anyhow::Result<i32> {
    let public_path = args.public.clone().unwrap_or_else(|| {
        let mut p = args.out.clone().into_os_string();
        p.push(".pub");
        PathBuf::from(p)
    });
    for p in [&args.out, &public_path] {
        if p.exists() {
            return Ok(super::usage_error(format!(
                "{}: already exists; keygen never overwrites a key (hint: --out another file)",
                p.display()
            )));
        }
    }
    let (key, private_pem) = match SigningKey::generate() {
        Ok(k) => k,
        Err(e) => return Err(anyhow::anyhow!(e)),
    };
    write_new(&args.out, private_pem.as_bytes(), 0o600)?;
    let public = key.public();
    write_new(&public_path, public.to_pem().as_bytes(), 0o644)?;
    outln!("{}", public.to_pem().trim_end());
    outln!("key id {}", public.keyid());
    info!(
        "private key: {} (store it as the secret ${KEY_ENV} of the pipeline that runs hookstorm, e.g. `gh secret set {KEY_ENV} < {}`; never hand it over)",
        args.out.display(),
        args.out.display()
    );
    info!(
        "public key: {} (hand it over; a recipient checks a folder with `hookstorm verify --key {} FOLDER`)",
        public_path.display(),
        public_path.display()
    );
    Ok(hookstorm::exit::PASS)
}

/// Creates `path` new with `mode` and writes `bytes`.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    f.write_all(bytes)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(())
}

/// The signing key in the environment, if any; a key that is no key is
/// a usage error (the message names the variable, never the key).
pub fn signing_key() -> Result<Option<SigningKey>, i32> {
    attest::key_from_env(|v| std::env::var(v).ok()).map_err(super::usage_error)
}

/// `then` with the environment's signing key, on a multi-threaded
/// runtime: how `run` and `sink` start. A key that is no key exits as a
/// usage error before anything starts.
pub fn block_on_with_key<F, Fut>(then: F) -> anyhow::Result<i32>
where
    F: FnOnce(Option<SigningKey>) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<i32>>,
{
    let key = match signing_key() {
        Ok(k) => k,
        Err(code) => return Ok(code),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(then(key))
}

/// Signs the sealed folder `dir` with `key` (when there is one) and says
/// so; a folder that cannot be signed is an error of the command.
pub fn sign(
    dir: &Path,
    key: Option<&SigningKey>,
    kind: &str,
    verdict: Option<String>,
    exit_code: Option<i32>,
) -> anyhow::Result<()> {
    let Some(key) = key else { return Ok(()) };
    let predicate = Predicate {
        kind: kind.into(),
        run_id: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        verdict,
        exit_code,
        hookstorm_version: env!("CARGO_PKG_VERSION").into(),
    };
    let path = attest::sign_folder(dir, key, predicate)
        .map_err(|e| anyhow::anyhow!("signing {}: {e}", dir.display()))?;
    info!("signed: {} (key {})", path.display(), key.public().keyid());
    Ok(())
}
