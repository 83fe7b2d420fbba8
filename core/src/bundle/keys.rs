//! Ed25519 key files for signing bundles (`toolcert keygen`, `run --sign`, `bundle verify
//! --key`).
//!
//! Both files are text: `#` comment lines, then one line `LABEL:HEX`.
//!
//! - secret key: `ed25519-secret:` and the 32-byte RFC 8032 seed in lowercase hex (64 digits),
//!   written with mode 0600;
//! - public key: `ed25519-public:` and the 32-byte RFC 8032 public key in lowercase hex.
//!
//! The labels keep one from being passed where the other is meant: a secret key given to
//! `--key` is refused instead of being published in a CI log by a verifier's error message.

use std::path::Path;

use ed25519_dalek::{SigningKey, VerifyingKey};

/// The label of a secret key file's key line.
pub const SECRET_LABEL: &str = "ed25519-secret:";

/// The label of a public key file's key line.
pub const PUBLIC_LABEL: &str = "ed25519-public:";

/// A key file that cannot be read, written or used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file cannot be read.
    #[error("{path}: cannot read the key file: {cause}")]
    Read {
        /// The file.
        path: String,
        /// Cause (in the message, not a `source`: `{:#}` would print it twice).
        cause: std::io::Error,
    },
    /// The file exists: a key is never overwritten (bundles signed with it would no longer
    /// verify against a fresh public key).
    #[error(
        "{path}: already exists; toolcert keygen never overwrites a key (bundles signed with it would stop verifying); move it away or choose another path"
    )]
    Exists {
        /// The file.
        path: String,
    },
    /// The file cannot be written.
    #[error("{path}: cannot write the key file: {cause}")]
    Write {
        /// The file.
        path: String,
        /// Cause (in the message, not a `source`: `{:#}` would print it twice).
        cause: std::io::Error,
    },
    /// The file is not a key file of the expected kind.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong and what was expected.
        message: String,
    },
    /// The operating system gave no randomness.
    #[error("cannot get random bytes from the operating system for a new key: {0}")]
    Random(String),
}

/// A new signing key from the operating system's randomness.
pub fn generate() -> Result<SigningKey, KeyError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| KeyError::Random(e.to_string()))?;
    let key = SigningKey::from_bytes(&seed);
    seed.fill(0);
    Ok(key)
}

/// The text of a secret key file.
pub fn secret_text(key: &SigningKey) -> String {
    format!(
        "# toolcert Ed25519 secret key (RFC 8032 seed, hex). Keep it secret: it signs bundles.\n{SECRET_LABEL}{}\n",
        hex::encode(key.to_bytes())
    )
}

/// The text of a public key file.
pub fn public_text(key: &VerifyingKey) -> String {
    format!(
        "# toolcert Ed25519 public key (RFC 8032, hex): `toolcert bundle verify --key FILE`.\n{PUBLIC_LABEL}{}\n",
        public_hex(key)
    )
}

/// A public key as the bundle's `signature.publicKey` spells it (lowercase hex).
pub fn public_hex(key: &VerifyingKey) -> String {
    hex::encode(key.to_bytes())
}

/// The single key line of a key file, with its label checked.
fn key_hex(
    path: &Path,
    text: &str,
    want: &str,
    other: &str,
    hint: &str,
) -> Result<String, KeyError> {
    let shown = path.display().to_string();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let fail = |message: String| KeyError::Format {
        path: shown.clone(),
        message,
    };
    match lines.as_slice() {
        [line] if line.starts_with(want) => Ok(line[want.len()..].to_string()),
        // Never echo the line: it may be a secret key given where a public one was meant.
        [line] if line.starts_with(other) => Err(fail(format!(
            "this is a {} key file, not a {} one; {hint}",
            label_kind(other),
            label_kind(want)
        ))),
        [] => Err(fail(format!(
            "no key line; expected one line `{want}HEX` (a file written by `toolcert keygen`)"
        ))),
        _ => Err(fail(format!(
            "not a toolcert key file; expected `#` comments and one line `{want}HEX` (64 hex digits), as `toolcert keygen` writes"
        ))),
    }
}

fn label_kind(label: &str) -> &'static str {
    if label == SECRET_LABEL {
        "secret"
    } else {
        "public"
    }
}

fn key_bytes(path: &Path, hex_text: &str, want: &str) -> Result<[u8; 32], KeyError> {
    let fail = |message: String| KeyError::Format {
        path: path.display().to_string(),
        message,
    };
    let bytes = hex::decode(hex_text).map_err(|_| {
        fail(format!(
            "the `{want}` value is not hex; expected 64 hex digits (32 bytes)"
        ))
    })?;
    bytes.try_into().map_err(|b: Vec<u8>| {
        fail(format!(
            "the `{want}` value is {} bytes; an Ed25519 key is 32 bytes (64 hex digits)",
            b.len()
        ))
    })
}

fn read(path: &Path) -> Result<String, KeyError> {
    crate::input::read_to_string(path, crate::input::MAX_KEY_BYTES).map_err(|cause| {
        KeyError::Read {
            path: path.display().to_string(),
            cause,
        }
    })
}

/// Load a secret key file (`run --sign KEYFILE`).
pub fn load_secret(path: &Path) -> Result<SigningKey, KeyError> {
    let text = read(path)?;
    let hex_text = key_hex(
        path,
        &text,
        SECRET_LABEL,
        PUBLIC_LABEL,
        "--sign takes the secret key (toolcert keygen's .key file); the public key is for `bundle verify --key`",
    )?;
    let mut seed = key_bytes(path, &hex_text, SECRET_LABEL)?;
    let key = SigningKey::from_bytes(&seed);
    seed.fill(0);
    Ok(key)
}

/// Load a public key file (`bundle verify --key PUBKEY`).
pub fn load_public(path: &Path) -> Result<VerifyingKey, KeyError> {
    let text = read(path)?;
    let hex_text = key_hex(
        path,
        &text,
        PUBLIC_LABEL,
        SECRET_LABEL,
        "--key takes the public key (toolcert keygen's .pub file); keep the secret key private",
    )?;
    let bytes = key_bytes(path, &hex_text, PUBLIC_LABEL)?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| KeyError::Format {
        path: path.display().to_string(),
        message: "the value is not a valid Ed25519 public key (not a curve point)".into(),
    })
}

/// Write a new key pair; neither file may exist (both are checked before either is written,
/// so a refusal leaves no half pair). The secret file gets mode 0600 on Unix.
pub fn write_pair(secret: &Path, public: &Path, key: &SigningKey) -> Result<(), KeyError> {
    for path in [secret, public] {
        if path.exists() {
            return Err(KeyError::Exists {
                path: path.display().to_string(),
            });
        }
    }
    write_new(secret, &secret_text(key), 0o600)?;
    write_new(public, &public_text(&key.verifying_key()), 0o644)
}

fn write_new(path: &Path, text: &str, mode: u32) -> Result<(), KeyError> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    // `create_new`: a file that appeared since the check is still not overwritten.
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let shown = path.display().to_string();
    let mut file = options.open(path).map_err(|cause| {
        if cause.kind() == std::io::ErrorKind::AlreadyExists {
            KeyError::Exists {
                path: shown.clone(),
            }
        } else {
            KeyError::Write {
                path: shown.clone(),
                cause,
            }
        }
    })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|cause| KeyError::Write { path: shown, cause })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_round_trips_and_refuses_to_overwrite() {
        let dir = std::env::temp_dir().join(format!("toolcert-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (secret, public) = (dir.join("k.key"), dir.join("k.pub"));
        let key = generate().unwrap();
        write_pair(&secret, &public, &key).unwrap();
        assert_eq!(load_secret(&secret).unwrap().to_bytes(), key.to_bytes());
        assert_eq!(load_public(&public).unwrap(), key.verifying_key());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&secret).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = write_pair(&secret, &public, &generate().unwrap()).unwrap_err();
        assert!(matches!(again, KeyError::Exists { .. }), "{again}");
        assert_eq!(load_secret(&secret).unwrap().to_bytes(), key.to_bytes());
        // Swapped files are refused without echoing the key.
        let err = load_public(&secret).unwrap_err().to_string();
        assert!(err.contains("this is a secret key file"), "{err}");
        assert!(!err.contains(&hex::encode(key.to_bytes())), "{err}");
        let err = load_secret(&public).unwrap_err().to_string();
        assert!(err.contains("this is a public key file"), "{err}");
        std::fs::write(&public, "ed25519-public:abcd\n").unwrap();
        let err = load_public(&public).unwrap_err().to_string();
        assert!(err.contains("2 bytes"), "{err}");
        std::fs::remove_dir_all(dir).ok();
    }
}
