//! Real processes and connections a test controls: the workspace's executables, their logs, a database link that can be cut.

use std::time::Duration;

/// A TCP relay to the test database server that a test can cut, as if the
/// server went away: it stops listening and drops the open connections.
pub struct DatabaseLink {
    pub port: u16,
    cut: tokio_util::sync::CancellationToken,
}

impl DatabaseLink {
    pub async fn open() -> Self {
        Self::on_port(0).await
    }

    /// A relay listening on `port` (0: any free one).
    pub async fn on_port(port: u16) -> Self {
        let server = ticket_core::testing::server_options();
        let upstream = format!("{}:{}", server.get_host(), server.get_port());
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = tokio_util::sync::CancellationToken::new();
        let relay = cut.clone();
        tokio::spawn(async move {
            loop {
                let mut client = tokio::select! {
                    () = relay.cancelled() => return,
                    accepted = listener.accept() => match accepted {
                        Ok((client, _)) => client,
                        Err(_) => return,
                    },
                };
                let (relay, upstream) = (relay.clone(), upstream.clone());
                tokio::spawn(async move {
                    let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        () = relay.cancelled() => {}
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                    }
                });
            }
        });
        Self { port, cut }
    }

    pub fn cut(&self) {
        self.cut.cancel();
    }
}

/// A child process's log, read on a thread of its own that drains the pipe
/// to the end, so that a full pipe never blocks the child.
pub struct ChildLog {
    lines: std::sync::mpsc::Receiver<String>,
    pub seen: Vec<String>,
}

impl ChildLog {
    pub fn follow(stderr: std::process::ChildStderr) -> Self {
        use std::io::BufRead as _;
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                // Nobody listening any more: keep draining all the same.
                let _ = tx.send(line);
            }
        });
        Self {
            lines,
            seen: Vec::new(),
        }
    }

    /// The next line (30 s at most).
    pub fn next_line(&mut self) -> String {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no further log line after:\n{}", self.seen.join("\n")));
        self.seen.push(line.clone());
        line
    }

    /// The first line from here on that contains `marker`.
    pub fn wait_for(&mut self, marker: &str) -> String {
        loop {
            let line = self.next_line();
            if line.contains(marker) {
                return line;
            }
        }
    }

    /// The API's bound address: only the log line announcing it tells.
    pub fn listening_addr(&mut self) -> String {
        let line = self.wait_for("listening addr=");
        line.split("listening addr=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_default()
            .to_owned()
    }

    /// Every line, once the child has exited (its pipe closed).
    pub fn all(mut self) -> Vec<String> {
        self.seen.extend(self.lines.iter());
        self.seen
    }
}

/// One of the workspace's executables with a clean environment but its
/// database: both are built by `cargo test --workspace`, the worker's next
/// to the API's.
pub fn executable(name: &str, database_url: &str) -> std::process::Command {
    let path = std::path::PathBuf::from(env!("CARGO_BIN_EXE_ticket-api")).with_file_name(name);
    assert!(
        path.exists(),
        "{} is missing: build the workspace (cargo build --workspace)",
        path.display()
    );
    let mut cmd = std::process::Command::new(path);
    cmd.env_clear()
        .env("DATABASE_URL", database_url)
        .stdin(std::process::Stdio::null());
    cmd
}

/// A child process killed when the test ends, however it ends.
pub struct Running(pub std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
