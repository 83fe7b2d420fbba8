//! The router, bounded bodies, streamed and cut answers, and bounded shutdown, over real
//! loopback connections.

use std::time::{Duration, Instant};

use bytes::Bytes;
use loopback_http::{Body, BodyError, Request, Router, Server, StatusCode, response};
use serde_json::json;

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

async fn echo(limit: usize, request: Request) -> loopback_http::Response {
    let name = request.param("name").unwrap_or_default().to_string();
    match request.body.read(limit).await {
        Ok(body) => response::json(
            StatusCode::OK,
            &json!({"name": name, "len": body.len(), "peer": request.peer.ip().is_loopback()}),
        ),
        Err(BodyError::TooLarge) => response::text(StatusCode::PAYLOAD_TOO_LARGE, "too large"),
        Err(e) => response::text(StatusCode::BAD_REQUEST, e.to_string()),
    }
}

async fn server() -> Server {
    let router = Router::new(8usize)
        .post("/echo/{name}", echo)
        .get("/stream", |_, _| async {
            let chunks = futures_util::stream::iter([
                Ok::<_, std::io::Error>(Bytes::from_static(b"data: 1\n\n")),
                Ok(Bytes::from_static(b"data: 2\n\n")),
            ]);
            response::with_type(
                StatusCode::OK,
                "text/event-stream",
                Body::from_stream(chunks),
            )
        })
        .get("/cut", |_, _| async {
            // hyper writes what it has only while the body is pending: pause before the cut.
            let chunks = futures_util::stream::unfold(0, |n| async move {
                match n {
                    0 => Some((Ok(Bytes::from_static(b"half")), 1)),
                    1 => {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        Some((Err(std::io::Error::other("cut")), 2))
                    }
                    _ => None,
                }
            });
            response::with_type(StatusCode::OK, "text/plain", Body::from_stream(chunks))
        })
        .get("/slow", |_, _| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            response::status(StatusCode::OK)
        });
    Server::bind(([127, 0, 0, 1], 0).into(), router)
        .await
        .unwrap()
}

#[tokio::test]
async fn routes_by_method_and_path_with_decoded_params() {
    let server = server().await;
    let base = format!("http://{}", server.local_addr());
    let c = client();
    let ok = c
        .post(format!("{base}/echo/a%2Fb"))
        .body("1234")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.headers()["content-type"], "application/json");
    assert_eq!(ok.headers()["content-length"], "34");
    assert_eq!(
        ok.json::<serde_json::Value>().await.unwrap(),
        json!({"name": "a/b", "len": 4, "peer": true})
    );
    let big = c
        .post(format!("{base}/echo/x"))
        .body("123456789")
        .send()
        .await
        .unwrap();
    assert_eq!(big.status(), 413);
    let wrong = c.get(format!("{base}/echo/x")).send().await.unwrap();
    assert_eq!(wrong.status(), 405);
    assert_eq!(wrong.headers()["allow"], "POST");
    let nowhere = c.get(format!("{base}/echo/")).send().await.unwrap();
    assert_eq!(nowhere.status(), 404);
    assert_eq!(nowhere.content_length(), Some(0));
    let bad = c.post(format!("{base}/echo/%ff")).send().await.unwrap();
    assert_eq!(bad.status(), 400);
}

#[tokio::test]
async fn streams_chunks_and_a_failed_stream_cuts_the_connection() {
    let server = server().await;
    let base = format!("http://{}", server.local_addr());
    let c = client();
    let stream = c.get(format!("{base}/stream")).send().await.unwrap();
    assert_eq!(stream.headers()["transfer-encoding"], "chunked");
    assert_eq!(stream.text().await.unwrap(), "data: 1\n\ndata: 2\n\n");
    let cut = c.get(format!("{base}/cut")).send().await.unwrap();
    assert_eq!(cut.status(), 200);
    assert!(
        cut.bytes().await.is_err(),
        "a cut body is an error, not a short success"
    );
}

#[tokio::test]
async fn shutdown_waits_at_most_its_grace_and_refuses_non_loopback() {
    let server = server().await;
    let url = format!("http://{}/slow", server.local_addr());
    let pending = tokio::spawn(async move { client().get(url).send().await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    server.shutdown(Duration::from_millis(300)).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        pending.await.unwrap().is_err(),
        "the slow answer was dropped"
    );
    let outside = Server::bind(([0, 0, 0, 0], 0).into(), Router::new(())).await;
    assert_eq!(
        outside.unwrap_err().kind(),
        std::io::ErrorKind::InvalidInput
    );
}
