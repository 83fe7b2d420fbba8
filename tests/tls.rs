//! `toolcert run --host https://…`: the real binary certifies the reference host behind a
//! loopback TLS listener whose certificate comes from a private CA (`--ca-cert`), and without
//! that CA it fails with a certificate error, not a panic.

use crate::support::rows;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

const PROFILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/docs/reference-host.profile.json"
);

fn toolcert(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolcert"))
        .args(args)
        .output()
        .expect("toolcert runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toolcert-tls-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A private CA (written to `ca.pem`) and a server certificate it signed for 127.0.0.1 and
/// localhost.
struct Pki {
    ca_pem: PathBuf,
    server_chain: Vec<CertificateDer<'static>>,
    server_key: PrivateKeyDer<'static>,
}

fn pki(dir: &Path) -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "toolcert test CA");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();

    let server_key = rcgen::KeyPair::generate().unwrap();
    let mut params =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "toolcert test host");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let server = params.signed_by(&server_key, &ca).unwrap();

    let ca_pem = dir.join("ca.pem");
    std::fs::write(&ca_pem, ca.pem()).unwrap();
    Pki {
        ca_pem,
        server_chain: vec![server.der().clone()],
        server_key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
    }
}

/// Terminates TLS on a loopback port and pipes each connection to the plain-http reference
/// host. Counts completed handshakes, so the test knows toolcert really spoke TLS.
async fn tls_front(pki: &Pki, upstream: std::net::SocketAddr) -> (u16, Arc<AtomicUsize>) {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(pki.server_chain.clone(), pki.server_key.clone_key())
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let handshakes = Arc::new(AtomicUsize::new(0));
    let counted = handshakes.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, counted) = (acceptor.clone(), counted.clone());
            tokio::spawn(async move {
                // A client that rejects the certificate ends the handshake: nothing to serve.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                counted.fetch_add(1, Ordering::SeqCst);
                if let Ok(mut plain) = TcpStream::connect(upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                }
            });
        }
    });
    (port, handshakes)
}

#[test]
fn an_https_host_certifies_with_its_private_ca_and_fails_clearly_without_it() {
    let dir = scratch("run");
    let pki = pki(&dir);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let host = rt
        .block_on(reference_host::start(reference_host::HostConfig {
            seams_enabled: true,
            ..Default::default()
        }))
        .unwrap();
    let (port, handshakes) = rt.block_on(tls_front(&pki, host.addr));
    let url = format!("https://127.0.0.1:{port}");
    let ca = pki.ca_pem.to_str().unwrap();

    // Kill-and-restart scenarios need `--spawn` (a host toolcert starts itself); without it
    // they are `blocked`, so they are skipped here. Everything else runs over TLS.
    let suite = toolcert::suite::Suite::embedded().unwrap();
    let spawned: Vec<&str> = suite
        .scenarios
        .iter()
        .filter(|s| s.needs_spawned_host())
        .map(|s| s.id.as_str())
        .collect();
    assert!(spawned.len() < suite.scenarios.len() / 4, "{spawned:?}");
    let report = dir.join("r.json");
    let mut args = vec![
        "run",
        "--seed",
        "11",
        "-q",
        "--host",
        &url,
        "--profile",
        PROFILE,
        "--ca-cert",
        ca,
        "--report",
        report.to_str().unwrap(),
    ];
    for id in &spawned {
        args.extend(["--skip", id]);
    }
    let out = toolcert(&args);
    assert!(out.status.success(), "{}", text(&out));
    // The kill-and-restart scenarios are skipped: a partial run, in which nothing denies.
    assert!(
        text(&out).contains("toolcert: partial: ") && text(&out).contains("no judged row denies"),
        "{}",
        text(&out)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["certification"]["verdict"], "partial");
    assert_eq!(report["certification"]["exitCode"], 0);
    let rows = report["rows"].as_array().unwrap();
    assert!(rows.len() >= 50, "{} rows judged", rows.len());
    for row in rows {
        if rows::other_major(row) {
            continue;
        }
        assert_eq!(row["disposition"], "pass", "{row}");
        assert!(row["assertions"].as_u64().unwrap() >= 1, "{row}");
    }
    let scenarios = report["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), suite.scenarios.len() - spawned.len());
    // Every exchange with the host went to the https URL, and the TLS front saw them.
    let whole = report.to_string();
    assert!(whole.contains(&format!("{url}/.well-known/openwop")));
    assert!(
        !whole.contains(&format!("{}/", host.base_url)),
        "the plain-http upstream leaked"
    );
    assert!(handshakes.load(Ordering::SeqCst) > 0);

    // Without the CA the host's certificate chains to nothing toolcert trusts: a certificate
    // error on every row, exit 1, no panic.
    let before = handshakes.load(Ordering::SeqCst);
    let out = toolcert(&[
        "run",
        "disc.v2-root",
        "--exact",
        "--host",
        &url,
        "--profile",
        PROFILE,
    ]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(!said.contains("panicked"), "{said}");
    assert!(said.contains("discovery failed"), "{said}");
    assert!(
        said.contains("invalid peer certificate: UnknownIssuer"),
        "a certificate error expected:\n{said}"
    );
    assert!(said.contains("pass it with --ca-cert FILE"), "{said}");
    assert!(said.contains("NOT CERTIFIED"), "{said}");
    assert_eq!(handshakes.load(Ordering::SeqCst), before);

    rt.block_on(host.shutdown());
}

#[test]
fn a_bad_ca_cert_stops_the_run_before_any_scenario_with_exit_2() {
    let dir = scratch("bad");
    let missing = dir.join("missing.pem");
    let key_only = dir.join("key.pem");
    std::fs::write(
        &key_only,
        rcgen::KeyPair::generate().unwrap().serialize_pem(),
    )
    .unwrap();
    for (file, what) in [
        (&missing, "cannot read the file"),
        (&key_only, "no certificate in it (found PRIVATE KEY)"),
    ] {
        let out = toolcert(&[
            "run",
            "--host",
            "https://127.0.0.1:9",
            "--ca-cert",
            file.to_str().unwrap(),
        ]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(
            said.contains(&format!("--ca-cert {}: {what}", file.display())),
            "{said}"
        );
        assert!(
            !said.contains("test result"),
            "no scenario may run:\n{said}"
        );
    }
}
