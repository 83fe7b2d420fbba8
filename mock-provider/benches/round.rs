//! Latency of one scripted round over HTTP.
//!
//! `cargo bench -p mock-provider` starts the provider, loads a script of 2000 `text` rounds,
//! sends 2000 sequential non-streaming Chat Completions requests over one keep-alive client,
//! and prints the median, p90 and max latency per round in microseconds (target: median
//! under 1 ms on a 2-core machine).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use mock_provider::{MockProvider, Script};
use serde_json::json;

const ROUNDS: usize = 2000;

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("cannot start a tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(mut times) => {
            times.sort();
            let micros = |d: Duration| d.as_micros();
            let median = times[times.len() / 2];
            let p90 = times[times.len() * 9 / 10];
            let max = times[times.len() - 1];
            println!(
                "mock-provider round latency over {ROUNDS} sequential non-streaming OpenAI requests: median {} µs, p90 {} µs, max {} µs (target: median < 1000 µs)",
                micros(median),
                micros(p90),
                micros(max)
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<Vec<Duration>, Box<dyn std::error::Error>> {
    let provider = MockProvider::start().await?;
    let model = "bench-rounds";
    let rounds: Vec<_> = (0..ROUNDS)
        .map(|i| json!({"text": format!("answer {i}")}))
        .collect();
    provider.load(Script::from_json(
        &json!({"model": model, "rounds": rounds}),
    )?)?;
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(1)
        .build()?;
    let url = format!("{}/v1/chat/completions", provider.base_url());
    let body = json!({
        "model": model,
        "messages": [{"role": "user", "content": "hello"}],
    });
    let mut times = Vec::with_capacity(ROUNDS);
    for i in 0..ROUNDS {
        let started = Instant::now();
        let response = client.post(&url).json(&body).send().await?;
        let status = response.status();
        let answer: serde_json::Value = response.json().await?;
        times.push(started.elapsed());
        let expected = format!("answer {i}");
        if !status.is_success() || answer["choices"][0]["message"]["content"] != expected {
            return Err(format!("round {i}: unexpected answer {status} {answer}").into());
        }
    }
    if !provider.problems(model).is_empty() {
        return Err(format!("problems recorded: {:?}", provider.problems(model)).into());
    }
    provider.shutdown().await;
    Ok(times)
}
