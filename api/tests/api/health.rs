use crate::helpers::{spawn_app, spawn_app_without_database};

#[tokio::test]
async fn liveness_and_readiness_with_a_database() {
    let app = spawn_app().await;
    assert_eq!(
        app.get("/healthz", None).await.assert_status(200)["status"],
        "ok"
    );
    assert_eq!(
        app.get("/readyz", None).await.assert_status(200)["status"],
        "ready"
    );
}

#[tokio::test]
async fn without_a_database_the_process_is_alive_but_not_ready() {
    let app = spawn_app_without_database().await;
    assert_eq!(
        app.get("/healthz", None).await.assert_status(200)["status"],
        "ok"
    );
    let reply = app.get("/readyz", None).await;
    reply.assert_problem(503, "DATABASE_UNAVAILABLE");
    // Data routes answer 503 with a hint to retry, not 500 or a hang.
    let reply = app.get("/api/concerts", None).await;
    reply.assert_problem(503, "DATABASE_UNAVAILABLE");
    assert!(reply.headers.contains_key("retry-after"));
}

#[tokio::test]
async fn a_client_too_slow_with_its_headers_is_disconnected() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let app = crate::helpers::spawn_app().await;
    let addr = app.base.trim_start_matches("http://");
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    // Headers begun, never finished (slowloris).
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: ticket\r\n")
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let mut buf = [0u8; 512];
    let read = tokio::time::timeout(crate::helpers::HEADER_READ_TIMEOUT * 3, slow.read(&mut buf))
        .await
        .expect("the server kept a slow client's connection open");
    let waited = started.elapsed();
    assert!(
        matches!(read, Ok(0) | Err(_))
            || std::str::from_utf8(&buf)
                .unwrap_or("")
                .starts_with("HTTP/1.1 408"),
        "{read:?}"
    );
    assert!(
        waited >= crate::helpers::HEADER_READ_TIMEOUT / 2,
        "closed too early: {waited:?}"
    );
    // Everyone else is served meanwhile.
    app.get("/healthz", None).await.assert_status(200);
}
