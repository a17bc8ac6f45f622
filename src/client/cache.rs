//! The response cache: SQLite (`results/cache.sqlite`), keyed by a SHA-256
//! of everything that determines an answer — provider, base URL, model,
//! messages, request options and sample index — and never an API key — and
//! by the model identity the server last reported at that endpoint (its
//! `model` field and `system_fingerprint`), so answers of a model the server
//! no longer serves are never taken for the current model's. Only successful
//! responses are stored.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::provider::{ChatRequest, Completion, ModelSetup, ServedBy};

/// An open cache.
pub(crate) struct Cache {
    conn: Mutex<Connection>,
}

/// What identifies one cached answer.
#[derive(Serialize)]
struct KeyMaterial<'a> {
    provider: &'static str,
    base_url: &'a str,
    model: &'a str,
    request: &'a ChatRequest,
    sample: u32,
    /// Absent until the endpoint has reported one, so older keys stay valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    served: Option<&'a ServedBy>,
}

/// The cache key of a request to a server that reports `served` as its model:
/// hex SHA-256 of its canonical JSON.
pub(crate) fn cache_key(
    model: &ModelSetup,
    base_url: &str,
    request: &ChatRequest,
    sample: u32,
    served: Option<&ServedBy>,
) -> String {
    let digest = Sha256::digest(key_material(model, base_url, request, sample, served));
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The canonical JSON a cache key hashes.
fn key_material(
    model: &ModelSetup,
    base_url: &str,
    request: &ChatRequest,
    sample: u32,
    served: Option<&ServedBy>,
) -> Vec<u8> {
    let request = without_image_paths(request);
    let material = KeyMaterial {
        provider: model.provider.prefix(),
        base_url,
        model: &model.model,
        request: &request,
        sample,
        served,
    };
    serde_json::to_vec(&material).expect("requests serialize")
}

/// `request` with its images named by digest alone: the same picture under
/// another path asks the same question. (Its bytes were never in it.)
/// An `exec` call's paths of this machine (the spec's folder, the images'
/// files) are named alike, so a cache moved with the repository answers.
fn without_image_paths(request: &ChatRequest) -> std::borrow::Cow<'_, ChatRequest> {
    let local = request.exec.as_ref().is_some_and(|e| !e.local.is_empty());
    if request.messages.iter().all(|m| m.images.is_empty()) && !local {
        return std::borrow::Cow::Borrowed(request);
    }
    let mut request = request.clone();
    let messages = std::sync::Arc::make_mut(&mut request.messages);
    for image in messages.iter_mut().flat_map(|m| &mut m.images) {
        image.path.clear();
    }
    request.exec = request.exec.as_ref().map(|e| e.portable());
    std::borrow::Cow::Owned(request)
}

/// Refuses a cache path that holds a FIFO, a device or a directory: SQLite
/// would open it and then wait on its first read for good.
fn regular_or_absent(path: &Path) -> rusqlite::Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(format!("{} is not a regular file", path.display())),
        )),
        _ => Ok(()),
    }
}

impl Cache {
    /// Opens or creates the cache database at `path`.
    pub(crate) fn open(path: &Path) -> rusqlite::Result<Cache> {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        regular_or_absent(path)?;
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             CREATE TABLE IF NOT EXISTS responses (
                 key TEXT PRIMARY KEY,
                 provider TEXT NOT NULL,
                 model TEXT NOT NULL,
                 completion TEXT NOT NULL,
                 created_unix INTEGER NOT NULL
             );
             CREATE TABLE IF NOT EXISTS identities (
                 endpoint TEXT PRIMARY KEY,
                 served TEXT NOT NULL
             );",
        )?;
        Ok(Cache {
            conn: Mutex::new(conn),
        })
    }

    /// Copies every answer and served identity of the cache at `other` that
    /// this one lacks (a key already here is kept: both hold the same
    /// request's answer); returns the answers added.
    pub(crate) fn absorb(&self, other: &Path) -> rusqlite::Result<u64> {
        regular_or_absent(other)?;
        let conn = self.conn.lock().expect("cache lock");
        conn.execute(
            "ATTACH DATABASE ?1 AS other",
            [other.to_string_lossy().as_ref()],
        )?;
        let copied = (|| {
            let added = conn.execute(
                "INSERT OR IGNORE INTO responses SELECT key, provider, model, completion, created_unix FROM other.responses",
                [],
            )?;
            conn.execute(
                "INSERT OR IGNORE INTO identities SELECT endpoint, served FROM other.identities",
                [],
            )?;
            Ok(added as u64)
        })();
        conn.execute("DETACH DATABASE other", [])?;
        copied
    }

    /// The cached completion for `key`, if any.
    pub(crate) fn get(&self, key: &str) -> rusqlite::Result<Option<Completion>> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let mut stmt = conn.prepare_cached("SELECT completion FROM responses WHERE key = ?1")?;
        let text: Option<String> = stmt.query_row(params![key], |row| row.get(0)).optional()?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// The model identity `endpoint` reported last, if it ever did.
    pub(crate) fn identity(&self, endpoint: &str) -> rusqlite::Result<Option<ServedBy>> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let text: Option<String> = conn
            .query_row(
                "SELECT served FROM identities WHERE endpoint = ?1",
                params![endpoint],
                |row| row.get(0),
            )
            .optional()?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// Records the model identity `endpoint` reports now.
    pub(crate) fn set_identity(&self, endpoint: &str, served: &ServedBy) -> rusqlite::Result<()> {
        let text = serde_json::to_string(served).expect("identities serialize");
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        conn.execute(
            "INSERT OR REPLACE INTO identities (endpoint, served) VALUES (?1, ?2)",
            params![endpoint, text],
        )?;
        Ok(())
    }

    /// Stores a successful completion.
    pub(crate) fn put(
        &self,
        key: &str,
        model: &ModelSetup,
        completion: &Completion,
    ) -> rusqlite::Result<()> {
        let text = serde_json::to_string(completion).expect("completions serialize");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let mut stmt = conn.prepare_cached(
            "INSERT OR REPLACE INTO responses (key, provider, model, completion, created_unix) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        stmt.execute(params![
            key,
            model.provider.prefix(),
            model.model,
            text,
            now
        ])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ProviderKind, Usage};

    fn request() -> ChatRequest {
        ChatRequest::new(Vec::new(), 10)
    }

    #[test]
    fn tools_are_keyed_and_a_request_without_them_keeps_its_key() {
        let bare = serde_json::to_value(request()).unwrap();
        let keys: Vec<&String> = bare.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["format", "max_tokens", "messages", "temperature"]);
        let model = ModelSetup::new(ProviderKind::OpenAi, "m");
        let key = |r: &ChatRequest| cache_key(&model, "http://x", r, 0, None);
        let mut with = request();
        with.tools.push(crate::provider::Tool {
            name: "f".into(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
        });
        let mut choice = with.clone();
        choice.tool_choice = Some(crate::provider::ToolChoice::Function {
            function: "f".into(),
        });
        let mut parallel = with.clone();
        parallel.parallel_tool_calls = Some(false);
        let keys = [request(), with, choice, parallel].map(|r| key(&r));
        for (i, a) in keys.iter().enumerate() {
            assert!(!keys[i + 1..].contains(a), "request {i} shares a key");
        }
    }

    #[test]
    fn reasoning_keys_a_request_only_when_set() {
        let model = ModelSetup::new(ProviderKind::OpenAi, "m");
        let key = |r: &ChatRequest| cache_key(&model, "http://x", r, 0, None);
        // The key of a request without reasoning, as every cache before it has it.
        assert_eq!(
            key(&request()),
            "d0081652af496dbb60023d0b2b99d844fdcadf7082140753e8b81d45a3d069f8"
        );
        let setting = |text: &str| ChatRequest {
            reasoning: toml::from_str(text).unwrap(),
            ..request()
        };
        let keys = [
            key(&request()),
            key(&setting("effort = \"low\"")),
            key(&setting("effort = \"high\"")),
            key(&setting("budget_tokens = 8")),
            key(&setting("enabled = false")),
        ];
        for (i, a) in keys.iter().enumerate() {
            assert!(!keys[i + 1..].contains(a), "setting {i} shares a key");
        }
        assert_eq!(key(&setting("")), keys[0], "an empty table keys nothing");
    }

    #[test]
    fn keys_separate_samples_and_models_and_round_trip() {
        let model = ModelSetup::new(ProviderKind::OpenAi, "m");
        let k0 = cache_key(&model, "http://x", &request(), 0, None);
        assert_ne!(k0, cache_key(&model, "http://x", &request(), 3, None));
        assert_ne!(
            k0,
            cache_key(
                &ModelSetup::new(ProviderKind::OpenAi, "n"),
                "http://x",
                &request(),
                0,
                None
            )
        );
        assert_ne!(k0, cache_key(&model, "http://y", &request(), 0, None));
        let mut extra = request();
        extra.extra.insert("cache_prompt".into(), false.into());
        assert_ne!(
            k0,
            cache_key(&model, "http://x", &extra, 0, None),
            "extra body fields are part of the key"
        );
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(&dir.path().join("c.sqlite")).unwrap();
        assert_eq!(cache.get(&k0).unwrap(), None);
        let c = Completion::new("hi", Usage::default());
        cache.put(&k0, &model, &c).unwrap();
        assert_eq!(cache.get(&k0).unwrap(), Some(c));
        let served = ServedBy {
            model: "m-2026".into(),
            fingerprint: Some("fp".into()),
        };
        assert_ne!(
            k0,
            cache_key(&model, "http://x", &request(), 0, Some(&served))
        );
        assert_eq!(cache.identity("e").unwrap(), None);
        cache.set_identity("e", &served).unwrap();
        assert_eq!(cache.identity("e").unwrap(), Some(served));
    }

    #[test]
    fn calls_survive_the_cache_and_tool_results_are_keyed() {
        let model = ModelSetup::new(ProviderKind::OpenAi, "m");
        let call = |arguments: serde_json::Value, invalid: Option<&str>| {
            serde_json::json!({"id": "call_1", "name": "math.factorial",
                "arguments": arguments, "invalid": invalid})
        };
        let calls = serde_json::json!([
            call(serde_json::json!({"n": 5}), None),
            call(serde_json::json!("{\"n\": 5"), Some("EOF while parsing"))
        ]);
        let answer = Completion {
            finish_reason: Some("tool_calls".into()),
            tool_calls: serde_json::from_value(calls).unwrap(),
            ..Completion::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(&dir.path().join("c.sqlite")).unwrap();
        cache.put("k", &model, &answer).unwrap();
        let back = cache.get("k").unwrap().unwrap();
        assert_eq!(back, answer);
        assert_eq!(back.tool_calls[0].arguments, serde_json::json!({"n": 5}));
        assert_eq!(
            back.tool_calls[1].invalid.as_deref(),
            Some("EOF while parsing")
        );
        // One turn later: the same history but for what the tool answered.
        let after = |result: &str| -> ChatRequest {
            let mut r = serde_json::to_value(request()).unwrap();
            r["messages"] = serde_json::json!([
                {"role": "user", "content": "5!?"},
                {"role": "assistant", "content": "", "tool_calls": [call(serde_json::json!({"n": 5}), None)]},
                {"role": "tool", "content": result, "tool_call_id": "call_1", "tool_name": "math.factorial"}
            ]);
            serde_json::from_value(r).unwrap()
        };
        let key = |r: &ChatRequest| cache_key(&model, "u", r, 0, None);
        assert_eq!(key(&after("120")), key(&after("120")));
        assert_ne!(key(&after("120")), key(&after("121")));
    }

    #[test]
    fn images_enter_the_key_by_digest_alone() {
        let sha = "ab".repeat(32);
        let with = |path: &str| -> ChatRequest {
            let image =
                serde_json::json!({"path": path, "mime": "image/png", "sha256": sha, "size": 7});
            let mut r = serde_json::to_value(request()).unwrap();
            r["messages"] =
                serde_json::json!([{"role": "user", "content": "read", "images": [image]}]);
            serde_json::from_value(r).unwrap()
        };
        let (here, there) = (with("datasets/ocr/ru_00.png"), with("/elsewhere/copy.png"));
        let model = ModelSetup::new(ProviderKind::OpenAi, "m");
        let material = String::from_utf8(key_material(&model, "u", &here, 0, None)).unwrap();
        assert!(
            !material.contains("ru_00"),
            "no path in the key: {material}"
        );
        assert!(material.contains(&sha), "{material}");
        let key = |r: &ChatRequest| cache_key(&model, "u", r, 0, None);
        assert_eq!(key(&here), key(&there));
        assert_ne!(key(&here), key(&request()));
        assert_eq!(
            here.messages[0].images[0].path, "datasets/ocr/ru_00.png",
            "the request keeps it"
        );
    }

    #[test]
    fn absorbing_a_cache_adds_what_it_lacks_and_keeps_what_it_has() {
        let model = ModelSetup::new(ProviderKind::OpenAi, "m");
        let answer = |text: &str| Completion::new(text, Usage::default());
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
        let (mine, theirs) = (Cache::open(&a).unwrap(), Cache::open(&b).unwrap());
        mine.put("k1", &model, &answer("mine")).unwrap();
        theirs.put("k1", &model, &answer("theirs")).unwrap();
        theirs.put("k2", &model, &answer("two")).unwrap();
        let served = ServedBy {
            model: "m".into(),
            fingerprint: None,
        };
        theirs.set_identity("e", &served).unwrap();
        drop(theirs);
        assert_eq!(mine.absorb(&b).unwrap(), 1);
        assert_eq!(mine.get("k1").unwrap().unwrap().text, "mine");
        assert_eq!(mine.get("k2").unwrap().unwrap().text, "two");
        assert_eq!(mine.identity("e").unwrap(), Some(served));
        assert_eq!(mine.absorb(&b).unwrap(), 0, "absorbing twice adds nothing");
    }
}
