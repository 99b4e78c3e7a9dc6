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
