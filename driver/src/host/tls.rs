//! Which certificate authorities toolcert trusts when the host is served over https.
//!
//! By default the system's roots (rustls with the platform verifier). `--ca-cert FILE` makes
//! the PEM certificates of the given files the *only* trusted roots, like `curl --cacert`: a
//! private staging CA certifies its host, and the result does not depend on the trust store of
//! the machine toolcert runs on. Files are read and checked when the flag is parsed, so a bad
//! file stops the run before any scenario, naming the file and what is wrong with it.

use std::path::{Path, PathBuf};

use rustls_pki_types::pem::{PemObject, SectionKind};

/// The roots the host client trusts: empty means the system's.
#[derive(Debug, Clone, Default)]
pub struct CaCerts {
    files: Vec<CaFile>,
}

#[derive(Debug, Clone)]
struct CaFile {
    path: PathBuf,
    /// DER of each certificate, in file order.
    certs: Vec<Vec<u8>>,
}

/// Why a `--ca-cert` file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaCertError {
    /// The file could not be read (missing, a directory, no permission).
    #[error("--ca-cert {path}: cannot read the file: {error}")]
    Unreadable {
        /// The file.
        path: String,
        /// The I/O error.
        error: String,
    },
    /// Nothing in the file looks like PEM.
    #[error(
        "--ca-cert {path}: not a PEM file: expected \"-----BEGIN CERTIFICATE-----\" blocks (a DER file converts with `openssl x509 -inform der -in FILE -out FILE.pem`)"
    )]
    NotPem {
        /// The file.
        path: String,
    },
    /// A PEM block is broken (no END line, bad base64).
    #[error("--ca-cert {path}: malformed PEM: {reason}")]
    MalformedPem {
        /// The file.
        path: String,
        /// What the PEM parser said.
        reason: String,
    },
    /// PEM, but no `CERTIFICATE` block.
    #[error(
        "--ca-cert {path}: no certificate in it (found {found}); expected \"-----BEGIN CERTIFICATE-----\" blocks"
    )]
    NoCertificate {
        /// The file.
        path: String,
        /// The kinds of block that were there.
        found: String,
    },
    /// A `CERTIFICATE` block whose content is not a usable X.509 certificate.
    #[error("--ca-cert {path}: certificate {index} is not a usable CA certificate: {reason}")]
    BadCertificate {
        /// The file.
        path: String,
        /// 1-based position among the file's certificates.
        index: usize,
        /// What the TLS stack said.
        reason: String,
    },
}

impl CaCerts {
    /// Read and check every file; the first bad one is the error.
    pub fn load<P: AsRef<Path>>(paths: &[P]) -> Result<CaCerts, CaCertError> {
        let files = paths
            .iter()
            .map(|p| CaFile::load(p.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(CaCerts { files })
    }

    /// Whether no file was given (the system's roots are trusted).
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The files given, in order.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(|f| f.path.as_path())
    }

    /// Apply to a client: with files, their certificates are the only roots.
    pub(crate) fn apply(
        &self,
        builder: reqwest::ClientBuilder,
    ) -> Result<reqwest::ClientBuilder, reqwest::Error> {
        if self.files.is_empty() {
            return Ok(builder);
        }
        let certs = self
            .files
            .iter()
            .flat_map(|f| f.certs.iter())
            .map(|der| reqwest::Certificate::from_der(der))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(builder.tls_certs_only(certs))
    }
}

impl CaFile {
    fn load(path: &Path) -> Result<CaFile, CaCertError> {
        let shown = path.display().to_string();
        let bytes =
            toolcert_core::input::read(path, toolcert_core::input::MAX_PEM_BYTES).map_err(|e| {
                CaCertError::Unreadable {
                    path: shown.clone(),
                    error: e.to_string(),
                }
            })?;
        let mut certs = Vec::new();
        let mut others: Vec<&'static str> = Vec::new();
        for section in <(SectionKind, Vec<u8>)>::pem_slice_iter(&bytes) {
            let (kind, der) = section.map_err(|e| CaCertError::MalformedPem {
                path: shown.clone(),
                reason: pem_reason(&e),
            })?;
            match kind {
                SectionKind::Certificate => certs.push(der),
                other => others.push(label(other)),
            }
        }
        if certs.is_empty() {
            // The parser skips blocks with labels it does not know.
            let has_block = bytes.windows(11).any(|w| w == b"-----BEGIN ");
            if !has_block {
                return Err(CaCertError::NotPem { path: shown });
            }
            others.dedup();
            let found = if others.is_empty() {
                "only blocks of an unknown kind".to_string()
            } else {
                others.join(", ")
            };
            return Err(CaCertError::NoCertificate { path: shown, found });
        }
        // Each certificate must be one the TLS stack accepts as a root: check it the way the
        // host client will use it.
        for (i, der) in certs.iter().enumerate() {
            let usable = reqwest::Certificate::from_der(der).and_then(|cert| {
                reqwest::Client::builder()
                    .no_proxy()
                    .tls_certs_only([cert])
                    .build()
            });
            if let Err(e) = usable {
                // reqwest wraps rustls' verdict ("invalid peer certificate: BadEncoding") in a
                // "builder error"; the innermost cause is the one that says what is wrong.
                let mut cause: &dyn std::error::Error = &e;
                while let Some(inner) = cause.source() {
                    cause = inner;
                }
                let reason = cause.to_string();
                let reason = reason.trim_start_matches("invalid peer certificate: ");
                return Err(CaCertError::BadCertificate {
                    path: shown,
                    index: i + 1,
                    reason: format!("the TLS stack rejects it as a root: {reason}"),
                });
            }
        }
        Ok(CaFile {
            path: path.to_path_buf(),
            certs,
        })
    }
}

fn pem_reason(e: &rustls_pki_types::pem::Error) -> String {
    use rustls_pki_types::pem::Error;
    match e {
        Error::MissingSectionEnd { end_marker } => format!(
            "a block has no \"-----END {}-----\" line",
            String::from_utf8_lossy(end_marker)
        ),
        Error::IllegalSectionStart { line } => {
            format!("bad BEGIN line {:?}", String::from_utf8_lossy(line))
        }
        Error::Base64Decode(reason) => format!("a block is not valid base64 ({reason})"),
        other => other.to_string(),
    }
}

fn label(kind: SectionKind) -> &'static str {
    match kind {
        SectionKind::Certificate => "CERTIFICATE",
        SectionKind::PublicKey => "PUBLIC KEY",
        SectionKind::RsaPrivateKey => "RSA PRIVATE KEY",
        SectionKind::PrivateKey => "PRIVATE KEY",
        SectionKind::EcPrivateKey => "EC PRIVATE KEY",
        SectionKind::Crl => "X509 CRL",
        SectionKind::Csr => "CERTIFICATE REQUEST",
        SectionKind::EchConfigList => "ECHCONFIG",
        _ => "a block of another kind",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str, contents: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("toolcert-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    fn ca_pem() -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.self_signed(&key).unwrap().pem()
    }

    fn error_of(path: &Path) -> String {
        CaCerts::load(&[path]).unwrap_err().to_string()
    }

    #[test]
    fn a_pem_ca_loads_and_several_files_add_up() {
        let one = scratch("one.pem", ca_pem().as_bytes());
        let two = scratch("two.pem", format!("{}{}", ca_pem(), ca_pem()).as_bytes());
        let cas = CaCerts::load(&[&one, &two]).unwrap();
        assert!(!cas.is_empty());
        assert_eq!(
            cas.files().collect::<Vec<_>>(),
            [one.as_path(), two.as_path()]
        );
        assert_eq!(cas.files.iter().map(|f| f.certs.len()).sum::<usize>(), 3);
        cas.apply(reqwest::Client::builder())
            .unwrap()
            .build()
            .unwrap();
        assert!(CaCerts::load::<&Path>(&[]).unwrap().is_empty());
    }

    #[test]
    fn a_missing_file_is_named_with_the_io_error() {
        let missing = std::env::temp_dir().join("toolcert-no-such-ca.pem");
        let message = error_of(&missing);
        assert!(
            message.starts_with(&format!(
                "--ca-cert {}: cannot read the file: ",
                missing.display()
            )),
            "{message}"
        );
        assert!(message.contains("No such file"), "{message}");
    }

    #[test]
    fn a_file_without_pem_blocks_is_not_pem() {
        for (name, contents) in [
            ("text.pem", &b"just some text\n"[..]),
            ("der.crt", &[0x30, 0x82, 0x01, 0x0a, 0x02, 0x82][..]),
            ("empty.pem", &b""[..]),
        ] {
            let path = scratch(name, contents);
            let message = error_of(&path);
            assert_eq!(
                message,
                format!(
                    "--ca-cert {}: not a PEM file: expected \"-----BEGIN CERTIFICATE-----\" blocks (a DER file converts with `openssl x509 -inform der -in FILE -out FILE.pem`)",
                    path.display()
                )
            );
        }
    }

    #[test]
    fn pem_without_a_certificate_says_what_it_found() {
        let key = rcgen::KeyPair::generate().unwrap().serialize_pem();
        let path = scratch("key.pem", key.as_bytes());
        assert_eq!(
            error_of(&path),
            format!(
                "--ca-cert {}: no certificate in it (found PRIVATE KEY); expected \"-----BEGIN CERTIFICATE-----\" blocks",
                path.display()
            )
        );
        let unknown = scratch(
            "unknown.pem",
            b"-----BEGIN FOO-----\nAAAA\n-----END FOO-----\n",
        );
        assert!(
            error_of(&unknown)
                .contains("no certificate in it (found only blocks of an unknown kind)"),
            "{}",
            error_of(&unknown)
        );
    }

    #[test]
    fn broken_pem_and_a_non_certificate_block_are_told_apart() {
        let unterminated = scratch("unterminated.pem", b"-----BEGIN CERTIFICATE-----\nMIIB\n");
        assert_eq!(
            error_of(&unterminated),
            format!(
                "--ca-cert {}: malformed PEM: a block has no \"-----END CERTIFICATE-----\" line",
                unterminated.display()
            )
        );

        // Valid base64, but the bytes are no X.509 certificate.
        let garbage = scratch(
            "garbage.pem",
            b"-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n",
        );
        assert_eq!(
            error_of(&garbage),
            format!(
                "--ca-cert {}: certificate 1 is not a usable CA certificate: the TLS stack rejects it as a root: BadEncoding",
                garbage.display()
            )
        );
    }
}
