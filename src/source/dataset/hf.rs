//! `hf://owner/name`: the Parquet files the Hugging Face hub serves for one
//! (config, split), downloaded once into a local cache and read from there.
//!
//! Layout: `<cache>/<owner>/<name>/<config>/<split>/<file>.parquet` plus
//! `files.json`, written last, listing the files of a complete download.
//! `<cache>` is `$HARNESS_CACHE/datasets`, else `~/.cache/harness/datasets`.
//! Offline (`HF_HUB_OFFLINE=1` or `--offline`) only the cache is read: a
//! `files.json`, else any `*.parquet` placed there by hand.
//!
//! Online, the file list comes from the datasets server's
//! `/parquet?dataset=&config=&split=` listing (`$HARNESS_HF_DATASETS_SERVER`,
//! default `https://datasets-server.huggingface.co`); each file's `url` is
//! written atomically (a temporary sibling, then a rename). `HF_TOKEN`, when set,
//! is sent as a bearer token and never written anywhere.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;

use super::error::DatasetError;

static OFFLINE: AtomicBool = AtomicBool::new(false);

/// Forces offline mode for this process (`--offline`).
pub(crate) fn set_offline(offline: bool) {
    OFFLINE.store(offline, Ordering::SeqCst);
}

/// Whether only the cache may be read.
pub(crate) fn offline() -> bool {
    OFFLINE.load(Ordering::SeqCst)
        || std::env::var("HF_HUB_OFFLINE")
            .is_ok_and(|v| matches!(v.as_str(), "1" | "true" | "TRUE" | "yes"))
}

/// The dataset cache directory.
pub(crate) fn cache_root() -> PathBuf {
    crate::files::cache_root().join("datasets")
}

/// Why a hub address is unusable or its split could not be downloaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HubError {
    /// A `hf://` path that is not `hf://owner/name`.
    #[error("`{0}` is not `hf://owner/name`")]
    NotOwnerName(String),
    /// A config or split name with characters a cache folder may not hold.
    #[error(
        "config `{config}` and split `{split}` may hold only letters, digits, `-`, `_` and `.`"
    )]
    BadName {
        /// The config.
        config: String,
        /// The split.
        split: String,
    },
    /// The HTTP client could not be built.
    #[error("HTTP client: {0}")]
    Client(reqwest::Error),
    /// The Parquet listing could not be fetched.
    #[error("cannot list the Parquet files: {0}")]
    List(reqwest::Error),
    /// The Parquet listing answered with an error status.
    #[error("listing the Parquet files: HTTP {0}")]
    ListStatus(reqwest::StatusCode),
    /// The Parquet listing could not be read whole.
    #[error("reading the Parquet listing: {0}")]
    Listing(reqwest::Error),
    /// The Parquet listing is not the JSON expected.
    #[error("unexpected Parquet listing: {0}")]
    ListingJson(serde_json::Error),
    /// The listing names no file for the config and split.
    #[error("the hub lists no Parquet files for this config and split")]
    NoFiles,
    /// A listed file whose name is not a `.parquet` file name.
    #[error("unexpected file name `{0}`")]
    FileName(String),
    /// A file could not be downloaded.
    #[error("downloading {name}: {source}")]
    Download {
        /// The file.
        name: String,
        /// The cause.
        source: reqwest::Error,
    },
    /// A file's download answered with an error status.
    #[error("downloading {name}: HTTP {status}")]
    DownloadStatus {
        /// The file.
        name: String,
        /// The status.
        status: reqwest::StatusCode,
    },
    /// A body ran past its cap: the listing, or a file past the dataset cap.
    #[error("{what} is over the {} limit", crate::files::human(*.limit))]
    TooLarge {
        /// The listing, or the file.
        what: String,
        /// The cap.
        limit: u64,
    },
    /// The cache folder or a file in it could not be written.
    #[error("{}: {source}", path.display())]
    Write {
        /// The folder or file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// One split of a hub dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HubSplit {
    /// `owner/name`.
    pub repo: String,
    /// The configuration (subset).
    pub config: String,
    /// The split.
    pub split: String,
}

impl HubSplit {
    /// Parses `hf://owner/name`; `None` when `path` is not a hub address.
    pub(crate) fn parse(
        path: &str,
        config: Option<&str>,
        split: &str,
    ) -> Option<Result<HubSplit, HubError>> {
        let repo = path.strip_prefix("hf://")?;
        let valid = |s: &str| {
            !s.is_empty()
                && s != ".."
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        let parts: Vec<&str> = repo.split('/').collect();
        if parts.len() != 2 || !parts.iter().all(|p| valid(p)) {
            return Some(Err(HubError::NotOwnerName(path.to_owned())));
        }
        let config = config.unwrap_or("default");
        if !valid(config) || !valid(split) {
            return Some(Err(HubError::BadName {
                config: config.to_owned(),
                split: split.to_owned(),
            }));
        }
        Some(Ok(HubSplit {
            repo: repo.to_owned(),
            config: config.to_owned(),
            split: split.to_owned(),
        }))
    }

    /// The cache directory of this split.
    pub(crate) fn dir(&self, root: &Path) -> PathBuf {
        root.join(&self.repo).join(&self.config).join(&self.split)
    }

    /// `hf://owner/name` (config, split), for messages.
    fn label(&self) -> String {
        format!(
            "hf://{} (config `{}`, split `{}`)",
            self.repo, self.config, self.split
        )
    }
}

/// The local Parquet files of `split`, downloading them first unless cached or offline.
pub(crate) fn split_files(split: &HubSplit) -> Result<Vec<PathBuf>, DatasetError> {
    let dir = split.dir(&cache_root());
    if let Some(files) = cached_files(&dir)? {
        return Ok(files);
    }
    if offline() {
        return Err(DatasetError::key(
            "path",
            format!(
                "{} is not in the cache at {} and the hub may not be reached (offline); \
                 run once online, or put the split's .parquet files there",
                split.label(),
                dir.display()
            ),
        ));
    }
    download(split, &dir)?;
    cached_files(&dir)?.ok_or_else(|| {
        DatasetError::key(
            "path",
            format!("{}: the download left no files", split.label()),
        )
    })
}

/// The files of a complete download (`files.json`), else hand-placed `*.parquet`, else `None`.
fn cached_files(dir: &Path) -> Result<Option<Vec<PathBuf>>, DatasetError> {
    let manifest = dir.join("files.json");
    if let Ok(text) = crate::files::read_text(&manifest, crate::files::FileKind::Manifest) {
        let names: Vec<String> = serde_json::from_str(&text)
            .map_err(|e| DatasetError::file(&manifest, format!("bad cache manifest: {e}")))?;
        return Ok(Some(names.iter().map(|n| dir.join(n)).collect()));
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    files.sort();
    Ok((!files.is_empty()).then_some(files))
}

#[derive(Deserialize)]
struct Listing {
    parquet_files: Vec<ListedFile>,
}

#[derive(Deserialize)]
struct ListedFile {
    config: String,
    split: String,
    url: String,
    filename: String,
}

/// The datasets server's base URL.
fn server() -> String {
    std::env::var("HARNESS_HF_DATASETS_SERVER")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "https://datasets-server.huggingface.co".to_owned())
        .trim_end_matches('/')
        .to_owned()
}

/// Downloads the split into `dir` on a thread of its own, so spec loading
/// stays synchronous even when called from inside an async runtime.
fn download(split: &HubSplit, dir: &Path) -> Result<(), DatasetError> {
    let (split, dir) = (split.clone(), dir.to_path_buf());
    let err = |m: String| DatasetError::key("path", m);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| err(format!("cannot start a download: {e}")))?;
        runtime
            .block_on(fetch_split(&split, &dir))
            .map_err(|m| err(format!("{}: {m}", split.label())))
    })
    .join()
    .unwrap_or_else(|_| Err(err("the download thread panicked".into())))
}

async fn fetch_split(split: &HubSplit, dir: &Path) -> Result<(), HubError> {
    crate::net::install_tls();
    let base = server();
    // A server that stops sending mid-body ends the download instead of the run.
    let mut builder = reqwest::Client::builder().read_timeout(STALL);
    if base.starts_with("http://127.0.0.1") || base.starts_with("http://localhost") {
        builder = builder.no_proxy();
    }
    let client = builder.build().map_err(HubError::Client)?;
    let token = crate::secrets::var("HF_TOKEN").filter(|t| !t.is_empty());
    if let Some(token) = &token {
        crate::secrets::register(token);
    }
    let get = |url: &str| {
        let request = client.get(url);
        match &token {
            Some(t) => request.bearer_auth(t),
            None => request,
        }
    };
    let listing_url = format!(
        "{base}/parquet?dataset={}&config={}&split={}",
        split.repo, split.config, split.split
    );
    let response = get(&listing_url).send().await.map_err(HubError::List)?;
    if !response.status().is_success() {
        return Err(HubError::ListStatus(response.status()));
    }
    let mut listing = Vec::new();
    capped_body(response, MAX_LISTING, &mut listing)
        .await
        .map_err(|e| e.into_hub("the Parquet listing", HubError::Listing))?;
    let listing: Listing = serde_json::from_slice(&listing).map_err(HubError::ListingJson)?;
    let files: Vec<&ListedFile> = listing
        .parquet_files
        .iter()
        .filter(|f| f.config == split.config && f.split == split.split)
        .collect();
    if files.is_empty() {
        return Err(HubError::NoFiles);
    }
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| HubError::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(write_error(dir))?;
    let mut names = Vec::new();
    for file in files {
        let name = Path::new(&file.filename)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".parquet"))
            .ok_or_else(|| HubError::FileName(file.filename.clone()))?;
        let download = |source| HubError::Download {
            name: name.clone(),
            source,
        };
        let response = get(&file.url).send().await.map_err(download)?;
        if !response.status().is_success() {
            return Err(HubError::DownloadStatus {
                name,
                status: response.status(),
            });
        }
        // Streamed to disk under the dataset cap: a file the harness could
        // not read back is refused while it downloads, not after.
        let path = dir.join(&name);
        let mut file = crate::files::AtomicFile::create(&path).map_err(write_error(&path))?;
        let limit = crate::files::FileKind::Dataset.limit();
        capped_body(response, limit, &mut file)
            .await
            .map_err(|e| match e {
                Capped::Write(source) => HubError::Write {
                    path: path.clone(),
                    source,
                },
                e => e.into_hub(&name, download),
            })?;
        file.commit().map_err(write_error(&path))?;
        names.push(name);
    }
    // Written last: its presence says every file it names is complete.
    let manifest = serde_json::to_string(&names).expect("names serialize");
    crate::files::write_atomic(&dir.join("files.json"), manifest.as_bytes())
        .map_err(write_error(dir))
}

/// The most bytes of the Parquet listing (a few KiB in practice).
const MAX_LISTING: u64 = 16 << 20;

/// How long a download may go without receiving a byte.
const STALL: std::time::Duration = std::time::Duration::from_secs(120);

/// Why a body was not read whole.
enum Capped {
    /// The connection failed.
    Http(reqwest::Error),
    /// The body ran past its cap.
    TooLarge(u64),
    /// The body could not be written where it goes.
    Write(std::io::Error),
}

impl Capped {
    /// The hub error of a failed read of `what`.
    fn into_hub(self, what: &str, http: impl FnOnce(reqwest::Error) -> HubError) -> HubError {
        match self {
            Capped::Http(e) => http(e),
            Capped::TooLarge(limit) => HubError::TooLarge {
                what: what.to_owned(),
                limit,
            },
            Capped::Write(source) => HubError::Write {
                path: PathBuf::from(what),
                source,
            },
        }
    }
}

/// Writes the body of `response` to `out` chunk by chunk, failing once it
/// passes `limit` bytes (an announced length past it fails at once).
async fn capped_body(
    mut response: reqwest::Response,
    limit: u64,
    out: &mut impl std::io::Write,
) -> Result<(), Capped> {
    if response.content_length().is_some_and(|len| len > limit) {
        return Err(Capped::TooLarge(limit));
    }
    let mut seen = 0u64;
    while let Some(chunk) = response.chunk().await.map_err(Capped::Http)? {
        seen = seen.saturating_add(chunk.len() as u64);
        if seen > limit {
            return Err(Capped::TooLarge(limit));
        }
        out.write_all(&chunk).map_err(Capped::Write)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_addresses_parse_and_reject_traversal() {
        assert!(HubSplit::parse("data/x.jsonl", None, "train").is_none());
        let s = HubSplit::parse("hf://evilfreelancer/rrr-benchmark", None, "routes_3")
            .unwrap()
            .unwrap();
        assert_eq!(
            (s.config.as_str(), s.split.as_str()),
            ("default", "routes_3")
        );
        assert_eq!(
            s.dir(Path::new("/c")),
            Path::new("/c/evilfreelancer/rrr-benchmark/default/routes_3")
        );
        assert!(HubSplit::parse("hf://a/../b", None, "t").unwrap().is_err());
        assert!(
            HubSplit::parse("hf://onlyname", None, "t")
                .unwrap()
                .is_err()
        );
        assert!(
            HubSplit::parse("hf://a/b", Some("x/y"), "t")
                .unwrap()
                .is_err()
        );
    }
}
