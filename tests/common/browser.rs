//! A headless Chromium driven over the DevTools protocol through a pipe
//! (`--remote-debugging-pipe`: commands on fd 3, replies on fd 4, each message
//! JSON ended by a NUL byte), so the browser tests need no WebSocket crate and no
//! port. Chromium comes from Debian (`apt-get install chromium`; `.ci/run` and
//! `scripts/test.sh` install it).
//!
//! It records what the tests assert on: console errors, uncaught exceptions and
//! every network request the page makes. `bench/report.rs` uses it too.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

/// How long any one command may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// The Chromium binary: `HARNESS_CHROMIUM`, else Debian's.
pub fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("HARNESS_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    path.exists().then_some(path)
}

/// Where screenshots go: `target/browser/` (under `CARGO_TARGET_DIR` when set).
pub fn artifacts() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("browser")
}

/// Whether browser tests must run (CI, `scripts/test.sh`) rather than skip.
pub fn required() -> bool {
    std::env::var_os("HARNESS_E2E").is_some() || std::env::var_os("CI").is_some()
}

/// A running browser with one page attached.
pub struct Browser {
    child: Child,
    commands: File,
    replies: Receiver<Value>,
    session: String,
    next_id: u64,
    /// Events received so far, in order.
    pub events: Vec<Value>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts Chromium headless with a fresh profile and opens a blank page; `None`
    /// (after saying why) when no Chromium is installed and the tests may skip.
    pub fn launch() -> Option<Browser> {
        let Some(binary) = chromium() else {
            assert!(
                !required(),
                "no Chromium at /usr/bin/chromium: apt-get install chromium (or set HARNESS_CHROMIUM)"
            );
            eprintln!("skipped: no Chromium (apt-get install chromium)");
            return None;
        };
        let profile = tempfile::tempdir().expect("a temporary profile");
        let (to_child, commands) = pipe();
        let (replies_fd, from_child) = pipe();
        let (child_in, child_out) = (to_child, from_child);
        let mut cmd = Command::new(binary);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--mute-audio",
            "--hide-scrollbars",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        let (read_end, write_end) = (raw(&child_in), raw(&child_out));
        // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork and exec.
        // Both ends move above 10 first, so neither can be overwritten by the
        // other's dup2 when the pipes happen to sit on fds 3 and 4 already.
        unsafe {
            cmd.pre_exec(move || {
                let r = libc::fcntl(read_end, libc::F_DUPFD, 10);
                let w = libc::fcntl(write_end, libc::F_DUPFD, 10);
                if r < 0 || w < 0 || libc::dup2(r, 3) < 0 || libc::dup2(w, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("chromium starts");
        drop((child_in, child_out));
        let (tx, rx) = channel();
        let reader = File::from(replies_fd);
        std::thread::spawn(move || {
            let mut reader = BufReader::new(reader);
            let mut buf = Vec::new();
            while let Ok(n) = reader.read_until(0, &mut buf) {
                if n == 0 {
                    break;
                }
                buf.pop();
                if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
                buf.clear();
            }
        });
        let mut browser = Browser {
            child,
            commands: File::from(commands),
            replies: rx,
            session: String::new(),
            next_id: 0,
            events: Vec::new(),
            _profile: profile,
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}));
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        for domain in [
            "Page.enable",
            "Runtime.enable",
            "Log.enable",
            "Network.enable",
        ] {
            browser.send(domain, json!({}));
        }
        Some(browser)
    }

    /// Sends a browser-level command and waits for its result.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.command(None, method, params)
    }

    /// Sends a command to the page and waits for its result.
    pub fn send(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.command(Some(&session), method, params)
    }

    fn command(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).expect("serializes");
        bytes.push(0);
        self.commands
            .write_all(&bytes)
            .expect("chromium reads commands");
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .replies
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no reply to {method} within {TIMEOUT:?}"));
            if v["id"] == json!(id) {
                if let Some(err) = v.get("error") {
                    panic!("{method} failed: {err}");
                }
                return v["result"].clone();
            }
            self.events.push(v);
        }
    }

    /// Waits until an event named `method` has arrived (or was received before).
    pub fn wait_event(&mut self, method: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while !self.events.iter().any(|e| e["method"] == method) {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .replies
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no {method} within {TIMEOUT:?}"));
            self.events.push(v);
        }
    }

    /// Sets the viewport (CSS pixels); narrow ones emulate a phone.
    pub fn viewport(&mut self, width: u32, height: u32) {
        self.send(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}),
        );
    }

    /// Opens `path` as a `file://` page and waits for it to load and draw.
    pub fn open(&mut self, path: &Path) {
        self.events.retain(|e| e["method"] != "Page.loadEventFired");
        let url = format!(
            "file://{}",
            path.canonicalize().expect("page exists").display()
        );
        self.send("Page.navigate", json!({"url": url}));
        self.wait_event("Page.loadEventFired");
        self.wait_for("document.body.dataset.ready === 'true'");
    }

    /// Evaluates `expression` in the page and returns its value (promises awaited).
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.send(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("`{expression}` threw: {e}");
        }
        r["result"]["value"].clone()
    }

    /// Polls `condition` until it holds.
    pub fn wait_for(&mut self, condition: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while self.eval(condition) != json!(true) {
            assert!(Instant::now() < deadline, "`{condition}` never held");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A PNG of the viewport, written to `path`.
    pub fn screenshot(&mut self, path: &Path) {
        let shot = self.send("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("image data"))
            .expect("base64");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("artifact directory");
        }
        std::fs::write(path, png).expect("screenshot written");
    }

    /// Console errors, uncaught exceptions and error log entries seen so far.
    pub fn errors(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| {
                let p = &e["params"];
                match e["method"].as_str()? {
                    "Runtime.exceptionThrown" => Some(p["exceptionDetails"].to_string()),
                    "Runtime.consoleAPICalled"
                        if matches!(p["type"].as_str(), Some("error" | "assert")) =>
                    {
                        Some(p["args"].to_string())
                    }
                    "Log.entryAdded" if p["entry"]["level"] == "error" => {
                        Some(p["entry"].to_string())
                    }
                    _ => None,
                }
            })
            .collect()
    }

    /// URLs of every request the page made.
    pub fn requests(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e["method"] == "Network.requestWillBeSent")
            .filter_map(|e| e["params"]["request"]["url"].as_str().map(str::to_owned))
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A pipe as (read end, write end).
fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: pipe2 just returned these descriptors, owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

fn raw(fd: &OwnedFd) -> i32 {
    use std::os::fd::AsRawFd;
    fd.as_raw_fd()
}
