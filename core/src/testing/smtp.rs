//! A real SMTP server for a test: `scripts/smtp-sink.py` (Python's
//! aiosmtpd) on a port of its own, every message it took parsed as MIME by
//! Python's email package and read back here as JSON. It can refuse the
//! first messages (451), refuse a recipient (550), answer slowly, and go
//! down and come back on the same port.

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How the server behaves (its flags).
#[derive(Debug, Clone, Default)]
pub struct Behaviour {
    /// The first this many messages are answered 451 (try again later).
    pub fail_first: u32,
    /// Recipients answered 550 (refused for good).
    pub reject: Vec<String>,
    /// Wait before answering each message's DATA.
    pub delay: Duration,
    /// Read only the headers and keep only the Message-ID (a benchmark's
    /// sink).
    pub quiet: bool,
}

pub struct SmtpSink {
    port: u16,
    behaviour: Behaviour,
    child: Option<Child>,
    /// Every message taken, across restarts, in arrival order.
    messages: Arc<Mutex<Vec<Value>>>,
    /// The Message-ID of every message whose DATA ended, answered or not.
    receiving: Arc<Mutex<Vec<String>>>,
}

/// The interpreter with aiosmtpd: `TICKET_SMTP_PYTHON` (`scripts/smtp.sh`
/// prints it; `make test` sets it), else Debian's.
fn python() -> PathBuf {
    std::env::var_os("TICKET_SMTP_PYTHON")
        .map_or_else(|| PathBuf::from("/usr/bin/python3"), PathBuf::from)
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/smtp-sink.py")
}

impl SmtpSink {
    pub async fn start(behaviour: Behaviour) -> Self {
        let mut sink = Self {
            port: 0,
            behaviour,
            child: None,
            messages: Arc::new(Mutex::new(Vec::new())),
            receiving: Arc::new(Mutex::new(Vec::new())),
        };
        sink.up().await;
        sink
    }

    /// `smtp://127.0.0.1:PORT` (plain: the server is on this host).
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// Starts the server (again, on the same port once it had one).
    pub async fn up(&mut self) {
        assert!(self.child.is_none(), "the SMTP server is already up");
        let mut command = Command::new(python());
        command
            .arg(script())
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--fail-first")
            .arg(self.behaviour.fail_first.to_string())
            .arg("--delay-ms")
            .arg(self.behaviour.delay.as_millis().to_string());
        if self.behaviour.quiet {
            command.arg("--quiet");
        }
        for address in &self.behaviour.reject {
            command.arg("--reject").arg(address);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start the SMTP server ({e}): run scripts/smtp.sh (make test does)")
            });
        let stdout = child.stdout.take().expect("piped stdout");
        let (ready, port) = std::sync::mpsc::channel();
        let messages = self.messages.clone();
        let receiving = self.receiving.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if let Some(port) = line.strip_prefix("listening ") {
                    let _ = ready.send(port.trim().parse::<u16>().unwrap_or(0));
                } else if let Some(id) = line.strip_prefix("receiving ") {
                    receiving.lock().unwrap().push(id.to_owned());
                } else if let Ok(message) = serde_json::from_str(&line) {
                    messages.lock().unwrap().push(message);
                }
            }
        });
        let port = tokio::task::spawn_blocking(move || port.recv_timeout(Duration::from_secs(30)))
            .await
            .unwrap()
            .expect("the SMTP server did not start listening");
        assert!(port > 0);
        self.port = port;
        self.child = Some(child);
    }

    /// Stops the server: connections are refused until [`SmtpSink::up`].
    pub fn down(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Every message the server took, in arrival order.
    pub fn messages(&self) -> Vec<Value> {
        self.messages.lock().unwrap().clone()
    }

    /// The Message-IDs of the messages sent in full so far, whether the
    /// server has answered them yet or not.
    pub fn receiving(&self) -> Vec<String> {
        self.receiving.lock().unwrap().clone()
    }

    /// How many messages the server has taken.
    pub fn taken(&self) -> usize {
        self.messages.lock().unwrap().len()
    }

    /// Waits until the server has taken `n` messages (panics after `within`).
    pub async fn wait_for(&self, n: usize, within: Duration) -> Vec<Value> {
        let deadline = Instant::now() + within;
        loop {
            let messages = self.messages();
            if messages.len() >= n {
                return messages;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {n} messages arrived",
                messages.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.down();
    }
}

/// The parts of a parsed message of `content_type`.
pub fn parts<'a>(message: &'a Value, content_type: &str) -> Vec<&'a Value> {
    message["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter(|p| p["contentType"] == content_type)
                .collect()
        })
        .unwrap_or_default()
}

/// What the QR code in a PNG image says, read as a scanner reads it: the
/// image decoded (any bit depth, expanded to 8-bit grey), the symbol found
/// and decoded.
pub fn qr_text(png_bytes: &[u8]) -> String {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().expect("a PNG");
    let mut pixels = vec![0; reader.output_buffer_size().expect("a sized image")];
    let frame = reader.next_frame(&mut pixels).expect("a PNG frame");
    assert_eq!(frame.color_type, png::ColorType::Grayscale, "grey");
    let (width, height) = (frame.width as usize, frame.height as usize);
    let mut image = rqrr::PreparedImage::prepare_from_greyscale(width, height, |x, y| {
        pixels[y * frame.line_size + x]
    });
    let grids = image.detect_grids();
    assert_eq!(grids.len(), 1, "one QR code in the image");
    grids[0].decode().expect("a readable QR code").1
}
