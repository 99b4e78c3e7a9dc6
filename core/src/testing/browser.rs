//! A real headless Chromium driven over WebDriver (Debian's `chromium` and
//! `chromium-driver`; `scripts/browser.sh` installs them): the few commands
//! the page's tests and benchmark need, and waits for conditions on the
//! page (polled, as WebDriver has no push). Long because it is the whole
//! client: starting the driver, the session, each command and its waits,
//! with no WebDriver crate to lean on.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The W3C WebDriver key for the arrow right key.
pub const ARROW_RIGHT: &str = "\u{E014}";
/// How long a wait on the page lasts before the test fails.
pub const WAIT: Duration = Duration::from_secs(20);
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A running chromedriver, stopped when dropped.
pub struct Chromedriver {
    child: std::process::Child,
    base: String,
    http: reqwest::Client,
}

/// Where the driver is: `TICKET_CHROMEDRIVER`, else `chromedriver` on the
/// PATH (`scripts/browser.sh` installs it when missing and prints it).
pub fn chromedriver_path() -> PathBuf {
    if let Some(path) = std::env::var_os("TICKET_CHROMEDRIVER") {
        return PathBuf::from(path);
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromedriver"))
            .find(|candidate| candidate.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "no chromedriver: run scripts/browser.sh (make test does) or set TICKET_CHROMEDRIVER"
        )
    })
}

impl Chromedriver {
    pub async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = std::process::Command::new(chromedriver_path())
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let driver = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
        };
        let started = Instant::now();
        loop {
            let ready = driver
                .http
                .get(format!("{}/status", driver.base))
                .send()
                .await
                .ok()
                .and_then(|r| r.status().is_success().then_some(r));
            if let Some(response) = ready {
                let status: Value = response.json().await.unwrap_or_default();
                if status["value"]["ready"] == true {
                    return driver;
                }
            }
            assert!(started.elapsed() < WAIT, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A new browser of its own (its own profile: cookies and storage are
    /// not shared with any other), headless, `width` × `height`.
    pub async fn browser(&self, width: u32, height: u32) -> Browser {
        self.browser_speaking(width, height, "en-US").await
    }

    /// As [`Self::browser`], its user's language `language` (a BCP 47
    /// tag, "ko-KR"): what the page reads in `navigator.languages`.
    pub async fn browser_speaking(&self, width: u32, height: u32, language: &str) -> Browser {
        let args = vec![
            "--headless=new".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--no-first-run".to_owned(),
            // Root (as in containers) and hosts without unprivileged user
            // namespaces cannot use the sandbox; the page is our own.
            "--no-sandbox".to_owned(),
            // Prices are formatted in the browser's locale: one locale,
            // whatever the host's.
            format!("--lang={language}"),
            format!("--window-size={width},{height}"),
        ];
        let mut options = json!({ "args": args, "prefs": {"intl.accept_languages": language} });
        if let Some(binary) = chromium_binary() {
            options["binary"] = json!(binary);
        }
        let body = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": options,
            "timeouts": {"script": 30_000, "pageLoad": 30_000, "implicit": 0},
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let reply = command(
            &self.http,
            reqwest::Method::POST,
            &format!("{}/session", self.base),
            Some(body),
        )
        .await;
        let session = reply["sessionId"]
            .as_str()
            .expect("a WebDriver session")
            .to_owned();
        Browser {
            http: self.http.clone(),
            session: format!("{}/session/{session}", self.base),
            closed: false,
        }
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `TICKET_CHROMIUM`, else Debian's `/usr/bin/chromium`; else the driver
/// looks for Chrome itself.
fn chromium_binary() -> Option<String> {
    std::env::var("TICKET_CHROMIUM").ok().or_else(|| {
        Path::new("/usr/bin/chromium")
            .is_file()
            .then(|| "/usr/bin/chromium".to_owned())
    })
}

async fn command(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<Value>,
) -> Value {
    let request = http.request(method.clone(), url);
    let request = match body {
        Some(body) => request.json(&body),
        None => request,
    };
    let response = request.send().await.expect("chromedriver answers");
    let status = response.status();
    let value: Value = response.json().await.expect("a WebDriver answer");
    assert!(
        status.is_success(),
        "WebDriver {method} {url}: {status} {}",
        value["value"]
    );
    value["value"].clone()
}

/// One browser window; it quits when closed or dropped (a failed test
/// leaves no browser behind).
pub struct Browser {
    http: reqwest::Client,
    session: String,
    closed: bool,
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.closed {
            quit_blocking(&self.session);
        }
    }
}

/// `DELETE` of a session from a destructor, where nothing can be awaited.
fn quit_blocking(session: &str) {
    use std::io::{Read as _, Write as _};
    let Some((host, path)) = session
        .strip_prefix("http://")
        .and_then(|rest| rest.split_once('/'))
    else {
        return;
    };
    let Ok(mut stream) = std::net::TcpStream::connect(host) else {
        return;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let request = format!("DELETE /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_ok() {
        let _ = stream.read_to_end(&mut Vec::new());
    }
}

/// An element of the page.
#[derive(Debug, Clone)]
pub struct Element(String);

impl Browser {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        command(&self.http, method, &format!("{}{path}", self.session), body).await
    }

    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    /// Runs `body` (a function body: `return …`, `arguments[0]`…) in the page.
    pub async fn script(&self, body: &str, args: Vec<Value>) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": body, "args": args})),
        )
        .await
    }

    /// The elements matching a CSS selector now.
    pub async fn find_all(&self, css: &str) -> Vec<Element> {
        let found = self
            .call(
                reqwest::Method::POST,
                "/elements",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        found
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e[ELEMENT].as_str().map(|id| Element(id.to_owned())))
            .collect()
    }

    /// Waits until a script's answer is truthy (not null, false, 0 or "")
    /// and returns it; fails the test after [`WAIT`], saying what it waited for.
    pub async fn wait_for(&self, what: &str, body: &str, args: Vec<Value>) -> Value {
        let started = Instant::now();
        loop {
            let value = self.script(body, args.clone()).await;
            let truthy = match &value {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return value;
            }
            assert!(
                started.elapsed() < WAIT,
                "waited {WAIT:?} for {what}; the page says: {}",
                self.script("return document.querySelector('main')?.innerText", vec![])
                    .await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits for an element matching `css` (whose text contains `text`, if
    /// given).
    pub async fn wait_element(&self, css: &str, text: Option<&str>) -> Element {
        let what = format!("{css} with {text:?}");
        let found = self
            .wait_for(
                &what,
                "const [css, text] = arguments; \
                 return [...document.querySelectorAll(css)] \
                   .find(e => text === null || e.textContent.includes(text)) || null;",
                vec![json!(css), json!(text)],
            )
            .await;
        Element(
            found[ELEMENT]
                .as_str()
                .unwrap_or_else(|| panic!("an element reference, not {found}"))
                .to_owned(),
        )
    }

    pub async fn click(&self, element: &Element) {
        self.call(
            reqwest::Method::POST,
            &format!("/element/{}/click", element.0),
            Some(json!({})),
        )
        .await;
    }

    /// Types into an element as a user would (after clearing it).
    pub async fn type_into(&self, element: &Element, text: &str) {
        self.call(
            reqwest::Method::POST,
            &format!("/element/{}/clear", element.0),
            Some(json!({})),
        )
        .await;
        self.keys(element, text).await;
    }

    /// Sends keys to an element (see [`ARROW_RIGHT`]).
    pub async fn keys(&self, element: &Element, text: &str) {
        self.call(
            reqwest::Method::POST,
            &format!("/element/{}/value", element.0),
            Some(json!({"text": text})),
        )
        .await;
    }

    pub async fn text(&self, element: &Element) -> String {
        self.call(
            reqwest::Method::GET,
            &format!("/element/{}/text", element.0),
            None,
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    pub async fn attribute(&self, element: &Element, name: &str) -> Option<String> {
        self.call(
            reqwest::Method::GET,
            &format!("/element/{}/attribute/{name}", element.0),
            None,
        )
        .await
        .as_str()
        .map(str::to_owned)
    }

    /// The page's cookies, as WebDriver gives them (`name`, `value`,
    /// `sameSite`, `httpOnly`…).
    pub async fn cookies(&self) -> Vec<Value> {
        self.call(reqwest::Method::GET, "/cookie", None)
            .await
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Saves a PNG of the window.
    pub async fn screenshot(&self, path: &Path) {
        use base64::Engine as _;
        let png = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap_or_default())
            .expect("a base64 screenshot");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("a screenshot folder");
        }
        std::fs::write(path, bytes).expect("the screenshot is written");
    }

    /// The console's errors since the last call, but for the answers of 4xx
    /// the page expects and shows (Chromium logs each as an error): a
    /// script that failed, a policy that blocked something, a 5xx.
    pub async fn console_errors(&self) -> Vec<String> {
        let entries = self
            .call(
                reqwest::Method::POST,
                "/se/log",
                Some(json!({"type": "browser"})),
            )
            .await;
        entries
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["level"] == "SEVERE")
            .filter_map(|e| e["message"].as_str())
            .filter(|m| !m.contains("the server responded with a status of 4"))
            .map(str::to_owned)
            .collect()
    }

    /// A Chrome DevTools Protocol command (through chromedriver), such as
    /// `Network.emulateNetworkConditions` to cut the page's network.
    pub async fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.call(
            reqwest::Method::POST,
            "/goog/cdp/execute",
            Some(json!({"cmd": cmd, "params": params})),
        )
        .await
    }

    /// Cuts the page's network (`false`: restores it), as a scanner
    /// losing its connection: every request fails as unreachable.
    pub async fn offline(&self, offline: bool) {
        self.cdp("Network.enable", json!({})).await;
        self.cdp(
            "Network.emulateNetworkConditions",
            json!({"offline": offline, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}),
        )
        .await;
    }

    pub async fn close(mut self) {
        self.call(reqwest::Method::DELETE, "", None).await;
        self.closed = true;
    }
}

/// Where the tests save their screenshots: `TICKET_SCREENSHOTS`, else
/// `target/screenshots` (`scripts/screenshots.sh` copies them to
/// `docs/screenshots/`).
pub fn screenshot_dir() -> PathBuf {
    std::env::var_os("TICKET_SCREENSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/screenshots"))
}
