use crate::helpers::{spawn_app, spawn_app_without_database};

#[tokio::test]
async fn liveness_and_readiness_with_a_database() {
    let app = spawn_app().await;
    assert_eq!(
        app.get("/healthz", None).await.assert_status(200)["status"],
        "ok"
    );
    let ready = app.get("/readyz", None).await;
    assert_eq!(ready.assert_status(200)["status"], "ready");
    assert_eq!(ready.body["database"], "up");
}

#[tokio::test]
async fn an_instance_that_reached_the_database_stays_ready_through_an_outage() {
    // Readiness failing on every instance at once would take them all out of
    // the Service, and clients would get the ingress's error instead of 503
    // with Retry-After.
    let (db, _pool) = ticket_core::testing::TestDatabase::migrated().await;
    let link = crate::helpers::DatabaseLink::open().await;
    let pool = sqlx::mysql::MySqlPoolOptions::new()
        .acquire_timeout(std::time::Duration::from_secs(1))
        .connect_lazy_with(db.options().host("127.0.0.1").port(link.port));
    let base = crate::helpers::start_server_with(pool.clone(), None).await;
    let app = crate::helpers::TestApp::at(base, pool);
    let ready = app.get("/readyz", None).await;
    assert_eq!(ready.assert_status(200)["database"], "up");

    link.cut();
    let ready = app.get("/readyz", None).await;
    assert_eq!(ready.assert_status(200)["status"], "ready");
    assert_eq!(ready.body["database"], "down");
    let reply = app.get("/api/concerts", None).await;
    reply.assert_problem(503, "DATABASE_UNAVAILABLE");
    assert!(reply.headers.contains_key("retry-after"));
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

#[tokio::test]
async fn a_slow_request_body_is_cut_off_with_408() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let app = crate::helpers::spawn_app().await;
    let limit = std::time::Duration::from_secs(1);
    let settings = ticket_api::startup::Settings {
        request_timeout: limit,
        ..crate::helpers::test_settings(None, ticket_api::middleware::limits::LimitSettings::OFF)
    };
    let server = ticket_api::startup::Application::build(settings, app.pool.clone())
        .await
        .unwrap();
    let addr = server.local_addr().unwrap();
    tokio::spawn(server.run_until(std::future::pending()));
    let users_before = app.count("users").await;

    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    // Headers complete, then a body that never arrives in full.
    slow.write_all(
        b"POST /api/users HTTP/1.1\r\nHost: ticket\r\nContent-Type: application/json\r\n\
          Content-Length: 64\r\n\r\n{\"nickName\": \"slow\",",
    )
    .await
    .unwrap();
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    tokio::time::timeout(limit * 10, slow.read_to_end(&mut answer))
        .await
        .expect("the server waited for the body beyond its request timeout")
        .unwrap();
    let waited = started.elapsed();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("REQUEST_TIMEOUT"), "{answer}");
    assert!(waited >= limit / 2, "cut off too early: {waited:?}");
    assert_eq!(app.count("users").await, users_before, "nothing written");
}
