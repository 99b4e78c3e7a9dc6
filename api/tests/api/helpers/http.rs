//! Talking to the API: requests, replies and their assertions, metrics.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::*;

pub fn client() -> reqwest::Client {
    ticket_core::tls::install_crypto_provider();
    reqwest::Client::builder()
        .pool_idle_timeout(Duration::from_secs(1))
        .build()
        .expect("an HTTP client")
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Reply {
    /// Asserts an RFC 9457 problem with this status and code; returns the body.
    #[track_caller]
    pub fn assert_problem(&self, status: u16, code: &str) -> &Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.body
        );
        let content_type = self
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok());
        assert_eq!(
            content_type,
            Some("application/problem+json"),
            "body: {}",
            self.body
        );
        assert_eq!(self.body["code"], code, "body: {}", self.body);
        assert_eq!(self.body["status"], status);
        assert!(self.body["title"].is_string() && self.body["detail"].is_string());
        &self.body
    }

    #[track_caller]
    pub fn assert_status(&self, status: u16) -> &Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.body
        );
        &self.body
    }

    /// Names of the fields a validation problem lists.
    pub fn error_fields(&self) -> Vec<String> {
        self.body["errors"]
            .as_array()
            .map(|errors| {
                errors
                    .iter()
                    .filter_map(|e| e["field"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl TestApp {
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        Self::reply(req.send().await.expect("request failed")).await
    }

    pub async fn reply(response: reqwest::Response) -> Reply {
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.expect("cannot read the body");
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    /// A request with a raw body and content type, for malformed input.
    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Reply {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .body(body);
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        Self::reply(req.send().await.expect("request failed")).await
    }

    /// A GET of `path` with these headers, the response as it comes (for
    /// caching, encodings and non-JSON bodies).
    pub async fn fetch(&self, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut request = self.client.get(format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.expect("the request failed")
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Reply {
        self.request(Method::GET, path, token, None).await
    }
    pub async fn post(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        self.request(Method::POST, path, token, Some(body)).await
    }
    pub async fn patch(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        self.request(Method::PATCH, path, token, Some(body)).await
    }
    pub async fn delete(&self, path: &str, token: Option<&str>) -> Reply {
        self.request(Method::DELETE, path, token, None).await
    }

    pub async fn try_login(&self, nick: &str, password: &str) -> Reply {
        self.post(
            "/api/auth/login",
            None,
            json!({"nickName": nick, "password": password}),
        )
        .await
    }

    pub async fn login(&self, nick: &str, password: &str) -> String {
        let reply = self.try_login(nick, password).await;
        reply.assert_status(200)["accessToken"]
            .as_str()
            .expect("no accessToken")
            .to_owned()
    }

    /// `GET /metrics`, parsed (its status and content type checked).
    pub async fn scrape(&self) -> ticket_core::testing::prometheus_text::Samples {
        let response = self.fetch("/metrics", &[]).await;
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"],
            "text/plain; version=0.0.4; charset=utf-8"
        );
        let text = response.text().await.unwrap();
        ticket_core::testing::prometheus_text::parse(&text)
            .unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    /// One unlabelled sample of `/metrics` (0 when absent).
    pub async fn metric(&self, name: &str) -> f64 {
        ticket_core::testing::prometheus_text::value(&self.scrape().await, name, &[])
    }
}
