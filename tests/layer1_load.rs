//! A smaller Layer-1 load run in `cargo test` (the 10,000-request run is a bench): mixed keys,
//! concurrent repeats, no lost record and no duplicate run, witnessed at toolcert's receiver.

// Shared with the bench, which reports fields this test does not read.
#[allow(dead_code)]
#[path = "../benches/support/load.rs"]
mod load;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_keys_lose_nothing_and_duplicate_nothing() {
    let host = reference_host::start(reference_host::HostConfig::default())
        .await
        .unwrap();
    let outcome = load::layer1_load(&host.base_url, "refhost-alice-token", 1_000, 250, 16)
        .await
        .unwrap();
    host.shutdown().await;
    assert!(outcome.clean(), "{outcome:?}");
    assert_eq!(outcome.receiver_calls, 250);
}
