//! The chromedriver a test starts (on a free port, stopped when dropped)
//! and the browsers it opens: headless, each with its own profile, in the
//! language a test asks for.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Browser, WAIT};

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

/// axe-core's script: `TICKET_AXE` (`scripts/axe.sh` fetches the pinned
/// version, checked, and prints its path; make test does).
pub(super) fn axe_source() -> String {
    let path = std::env::var_os("TICKET_AXE").unwrap_or_else(|| {
        panic!("no axe-core: run scripts/axe.sh (make test does) and set TICKET_AXE")
    });
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("axe-core at {path:?}: {e}"))
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
        self.launch(width, height, language, Vec::new()).await
    }

    /// As [`Self::browser`], its camera a fake one that films `video` (a
    /// Y4M or MJPEG file, looped) and that the page may use unasked.
    pub async fn browser_with_camera(&self, width: u32, height: u32, video: &Path) -> Browser {
        let camera = vec![
            "--use-fake-device-for-media-stream".to_owned(),
            "--use-fake-ui-for-media-stream".to_owned(),
            format!("--use-file-for-fake-video-capture={}", video.display()),
        ];
        self.launch(width, height, "en-US", camera).await
    }

    async fn launch(&self, width: u32, height: u32, language: &str, extra: Vec<String>) -> Browser {
        let mut args = vec![
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
        args.extend(extra);
        let mut options = json!({ "args": args, "prefs": {"intl.accept_languages": language} });
        if let Some(binary) = chromium_binary() {
            options["binary"] = json!(binary);
        }
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": options,
            "timeouts": {"script": 30_000, "pageLoad": 30_000, "implicit": 0},
            "goog:loggingPrefs": {"browser": "ALL"},
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!("a JSON object")
        };
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = fantoccini::ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&self.base)
            .await
            .expect("a WebDriver session");
        let session = client
            .session_id()
            .await
            .expect("the session's id")
            .expect("a session");
        Browser {
            client,
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
