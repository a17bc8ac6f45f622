//! A headless Chromium driven over the DevTools protocol by `chromiumoxide`
//! (a maintained CDP client), behind the small blocking API the tests use.
//! Chromium comes from Debian (`apt-get install chromium`; `.ci/run` and
//! `scripts/test.sh` install it).
//!
//! It records what the tests assert on: console errors, uncaught exceptions,
//! error log entries and every network request the page makes.
//! `bench/report.rs` uses it too.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::browser::{Browser as Cdp, BrowserConfig};
use chromiumoxide::cdp::IntoEventKind;
use chromiumoxide::cdp::browser_protocol::emulation::SetDeviceMetricsOverrideParams;
use chromiumoxide::cdp::browser_protocol::log::{EventEntryAdded, LogEntryLevel};
use chromiumoxide::cdp::browser_protocol::network::EventRequestWillBeSent;
use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
use chromiumoxide::cdp::js_protocol::runtime::{
    ConsoleApiCalledType, EvaluateParams, EventConsoleApiCalled, EventExceptionThrown,
};
use chromiumoxide::page::{Page, ScreenshotParams};
use futures_util::StreamExt;
use serde_json::Value;

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

/// What the page did that tests assert on.
#[derive(Default)]
struct Seen {
    errors: Vec<String>,
    requests: Vec<String>,
}

/// A running browser with one page open.
pub struct Browser {
    cdp: Cdp,
    page: Page,
    seen: Arc<Mutex<Seen>>,
    _profile: tempfile::TempDir,
    // Declared last, dropped last: the browser's tasks run on it.
    runtime: tokio::runtime::Runtime,
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
        let config = BrowserConfig::builder()
            .chrome_executable(binary)
            .no_sandbox()
            .user_data_dir(profile.path())
            .launch_timeout(TIMEOUT)
            .request_timeout(TIMEOUT)
            .args(["--disable-gpu", "--disable-quic", "--no-first-run"])
            .build()
            .expect("a browser configuration");
        // One worker keeps the protocol read while a test thread sleeps.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("an async runtime");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (cdp, page) = runtime.block_on(async {
            let (cdp, mut handler) = Cdp::launch(config).await.expect("chromium starts");
            // A message the client cannot read (a newer Chromium's event)
            // is no reason to stop reading the rest.
            tokio::spawn(async move { while handler.next().await.is_some() {} });
            let page = cdp.new_page("about:blank").await.expect("a page");
            watch(&page, &seen).await;
            (cdp, page)
        });
        Some(Browser {
            cdp,
            page,
            seen,
            _profile: profile,
            runtime,
        })
    }

    /// Sets the viewport (CSS pixels); narrow ones emulate a phone.
    pub fn viewport(&mut self, width: u32, height: u32) {
        let metrics = SetDeviceMetricsOverrideParams::new(width, height, 1.0, width < 600);
        self.runtime
            .block_on(self.page.execute(metrics))
            .expect("the viewport is set");
    }

    /// Goes to `url` and waits for it to load; within the open page only
    /// its fragment changes (no load follows, so none is awaited).
    pub fn navigate(&mut self, url: &str) {
        if let Some((page, fragment)) = url.split_once('#') {
            if self.eval("location.href.split('#')[0]") == page {
                self.eval(&format!("location.hash = {}; true", Value::from(fragment)));
                return;
            }
        }
        self.runtime
            .block_on(self.page.goto(url))
            .unwrap_or_else(|e| panic!("cannot open {url}: {e}"));
    }

    /// Opens `path` as a `file://` page and waits for it to load and draw.
    pub fn open(&mut self, path: &Path) {
        let url = format!(
            "file://{}",
            path.canonicalize().expect("page exists").display()
        );
        self.navigate(&url);
        self.wait_for("document.body.dataset.ready === 'true'");
    }

    /// Evaluates `expression` in the page and returns its value (promises awaited).
    pub fn eval(&mut self, expression: &str) -> Value {
        let params = EvaluateParams::builder()
            .expression(expression)
            .return_by_value(true)
            .await_promise(true)
            .build()
            .expect("evaluation parameters");
        let reply = self
            .runtime
            .block_on(self.page.execute(params))
            .unwrap_or_else(|e| panic!("`{expression}` failed: {e}"));
        if let Some(e) = &reply.result.exception_details {
            panic!("`{expression}` threw: {e:?}");
        }
        reply.result.result.value.clone().unwrap_or(Value::Null)
    }

    /// Polls `condition` until it holds.
    pub fn wait_for(&mut self, condition: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while self.eval(condition) != Value::Bool(true) {
            assert!(Instant::now() < deadline, "`{condition}` never held");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A PNG of the viewport, written to `path`.
    pub fn screenshot(&mut self, path: &Path) {
        let params = ScreenshotParams::builder()
            .format(CaptureScreenshotFormat::Png)
            .build();
        let png = self
            .runtime
            .block_on(self.page.screenshot(params))
            .expect("a screenshot");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("artifact directory");
        }
        std::fs::write(path, png).expect("screenshot written");
    }

    /// Console errors, uncaught exceptions and error log entries seen so far.
    pub fn errors(&self) -> Vec<String> {
        self.seen.lock().unwrap().errors.clone()
    }

    /// URLs of every request the page made.
    pub fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().requests.clone()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Chromium started by this test, ended by its own handle.
        self.runtime.block_on(async {
            let _ = self.cdp.kill().await;
            let _ = self.cdp.wait().await;
        });
    }
}

/// Records into `seen` what the page reports from now on.
async fn watch(page: &Page, seen: &Arc<Mutex<Seen>>) {
    collect::<EventExceptionThrown>(page, seen, |e, s| {
        s.errors.push(format!("{:?}", e.exception_details));
    })
    .await;
    collect::<EventConsoleApiCalled>(page, seen, |e, s| {
        if matches!(
            e.r#type,
            ConsoleApiCalledType::Error | ConsoleApiCalledType::Assert
        ) {
            s.errors.push(format!("{:?}", e.args));
        }
    })
    .await;
    collect::<EventEntryAdded>(page, seen, |e, s| {
        if e.entry.level == LogEntryLevel::Error {
            s.errors.push(format!("{:?}", e.entry));
        }
    })
    .await;
    collect::<EventRequestWillBeSent>(page, seen, |e, s| {
        s.requests.push(e.request.url.clone());
    })
    .await;
}

/// Hands every event `T` of `page` to `record`, with what was seen so far.
async fn collect<T>(
    page: &Page,
    seen: &Arc<Mutex<Seen>>,
    record: impl Fn(&T, &mut Seen) + Send + 'static,
) where
    T: IntoEventKind + Unpin + Send + Sync + 'static,
{
    let mut events = page.event_listener::<T>().await.expect("an event stream");
    let seen = seen.clone();
    tokio::spawn(async move {
        while let Some(event) = events.next().await {
            record(&event, &mut seen.lock().unwrap());
        }
    });
}
