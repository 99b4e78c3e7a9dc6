//! A real headless Chromium driven over WebDriver (Debian's `chromium` and
//! `chromium-driver`; `scripts/browser.sh` installs them) through
//! fantoccini: the driver started on a free port, one browser a test, and
//! waits for conditions on the page (polled, as WebDriver has no push).
//! What fantoccini does not name (Chrome's DevTools commands, the
//! console's log) goes as commands of chromedriver's own.

mod driver;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fantoccini::elements::ElementRef;
use fantoccini::wd::WebDriverCompatibleCommand;
use serde_json::{Value, json};

use driver::axe_source;
pub use driver::{Chromedriver, chromedriver_path};

/// The W3C WebDriver key for the arrow right key.
pub const ARROW_RIGHT: &str = "\u{E014}";
/// How long a wait on the page lasts before the test fails.
pub const WAIT: Duration = Duration::from_secs(20);
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// One browser window; it quits when closed or dropped (a failed test
/// leaves no browser behind).
pub struct Browser {
    client: fantoccini::Client,
    /// The session's address, to end it from a destructor.
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
pub struct Element(fantoccini::elements::Element);

/// A command of chromedriver's own, sent in the session: `path` under it
/// (`goog/cdp/execute`, `se/log`) with a JSON body.
#[derive(Debug)]
struct DriverCommand {
    path: &'static str,
    body: Value,
}

impl WebDriverCompatibleCommand for DriverCommand {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/{}",
            session_id.unwrap_or_default(),
            self.path
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(self.body.to_string()))
    }
}

impl Browser {
    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("the page opens");
    }

    /// Runs `body` (a function body: `return …`, `arguments[0]`…) in the page.
    pub async fn script(&self, body: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(body, args)
            .await
            .unwrap_or_else(|e| panic!("the script fails: {e}\n{body}"))
    }

    /// The elements matching a CSS selector now.
    pub async fn find_all(&self, css: &str) -> Vec<Element> {
        self.client
            .find_all(fantoccini::Locator::Css(css))
            .await
            .expect("a search of the page")
            .into_iter()
            .map(Element)
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
        let id = found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("an element reference, not {found}"));
        Element(fantoccini::elements::Element::from_element_id(
            self.client.clone(),
            ElementRef::from(id.to_owned()),
        ))
    }

    pub async fn click(&self, element: &Element) {
        element.0.click().await.expect("the element is clicked");
    }

    /// Types into an element as a user would (after clearing it).
    pub async fn type_into(&self, element: &Element, text: &str) {
        element.0.clear().await.expect("the element is cleared");
        self.keys(element, text).await;
    }

    /// Sends keys to an element (see [`ARROW_RIGHT`]).
    pub async fn keys(&self, element: &Element, text: &str) {
        element.0.send_keys(text).await.expect("the keys are typed");
    }

    pub async fn text(&self, element: &Element) -> String {
        element.0.text().await.expect("the element's text")
    }

    pub async fn attribute(&self, element: &Element, name: &str) -> Option<String> {
        element.0.attr(name).await.expect("the element's attribute")
    }

    /// The page's cookies, as WebDriver gives them (`name`, `value`,
    /// `sameSite`, `httpOnly`…).
    pub async fn cookies(&self) -> Vec<Value> {
        let cookies = self.client.get_all_cookies().await.expect("the cookies");
        cookies
            .iter()
            .map(|c| {
                json!({
                    "name": c.name(),
                    "value": c.value(),
                    "path": c.path(),
                    "httpOnly": c.http_only().unwrap_or(false),
                    "secure": c.secure().unwrap_or(false),
                    "sameSite": c.same_site().map(|s| s.to_string()),
                })
            })
            .collect()
    }

    /// Saves a PNG of the window.
    pub async fn screenshot(&self, path: &Path) {
        let bytes = self.client.screenshot().await.expect("a screenshot");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("a screenshot folder");
        }
        std::fs::write(path, bytes).expect("the screenshot is written");
    }

    async fn driver(&self, path: &'static str, body: Value) -> Value {
        self.client
            .issue_cmd(DriverCommand { path, body })
            .await
            .unwrap_or_else(|e| panic!("chromedriver's {path}: {e}"))
    }

    /// The console's errors since the last call, but for the answers of 4xx
    /// the page expects and shows (Chromium logs each as an error): a
    /// script that failed, a policy that blocked something, a 5xx.
    pub async fn console_errors(&self) -> Vec<String> {
        let entries = self.driver("se/log", json!({"type": "browser"})).await;
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

    /// axe-core's serious and critical violations on the page as it is
    /// now: (rule, impact, the first elements it names).
    pub async fn accessibility_violations(&self) -> Vec<Value> {
        let loaded = self
            .script("return typeof window.axe === 'object';", vec![])
            .await;
        if loaded != Value::Bool(true) {
            // Run as the page's own script would be, so that it defines
            // `window.axe` (its policy is the browser's to bypass here).
            self.script(&format!("{}\n;return true;", axe_source()), vec![])
                .await;
        }
        let found = self
            .script(
                "return window.axe.run(document, {resultTypes: ['violations']}).then((r) => \
                   r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical') \
                     .map((v) => [v.id, v.impact, v.nodes.slice(0, 3).map((n) => n.target.join(' '))]));",
                vec![],
            )
            .await;
        found.as_array().cloned().unwrap_or_default()
    }

    /// A Chrome DevTools Protocol command (through chromedriver), such as
    /// `Network.emulateNetworkConditions` to cut the page's network.
    pub async fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.driver("goog/cdp/execute", json!({"cmd": cmd, "params": params}))
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
        self.closed = true;
        self.client
            .clone()
            .close()
            .await
            .expect("the browser quits");
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
