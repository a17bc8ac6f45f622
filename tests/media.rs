//! Images in specs, end to end through the real binary: they reach an
//! OpenAI-compatible server as `image_url` parts with `data:` URLs and an
//! Ollama server in a message's `images`, each instance its own picture; a
//! dataset column of image bytes (Parquet, the Hugging Face form) works like
//! a path; the journal, the cache and the golden files hold paths and
//! digests, never the bytes; a rerun asks nothing; JPEG and WebP are typed
//! by their bytes; the HTML report draws a capped thumbnail; an image over
//! the limit fails `check` at its key with exit 2.

use std::path::Path;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::common::fake_server::{FakeServer, Reply, Request};
use crate::common::workspace::Workspace;
use crate::common::{harness, root, run};

/// The default per-image limit, as `docs/media.md` gives it: 20 MiB.
const MAX_IMAGE_BYTES: u64 = 20 << 20;

/// An image's digest as journals record it.
fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The example's images and the line each shows.
const LINES: [(&str, &str); 2] = [
    ("en_41.png", "Please cancel my request"),
    ("ru_19.png", "Банковская карта заблокирована"),
];

/// Where a workspace spec's images are, as the journal records them: relative
/// to `specs/` in a temporary workspace (compared, never read from here).
const RECORDED_DIR: &str = "../datasets/ocr_mini/images";

const PROMPT: &str = "Write out the line of text in the image, exactly as printed.";

fn image_bytes(name: &str) -> Vec<u8> {
    std::fs::read(
        root()
            .join("docs/examples/datasets/ocr_mini/images")
            .join(name),
    )
    .unwrap()
}

fn base64_of(name: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(image_bytes(name))
}

/// A workspace with the docs' example: `specs/ocr_images.toml` and `datasets/ocr_mini/`.
fn ocr_workspace() -> Workspace {
    let ws = Workspace::new();
    let from = root().join("docs/examples");
    let to = ws.path();
    std::fs::create_dir_all(to.join("datasets/ocr_mini/images")).unwrap();
    for file in [
        "specs/ocr_images.toml",
        "datasets/ocr_mini/lines.jsonl",
        "datasets/ocr_mini/images/en_41.png",
        "datasets/ocr_mini/images/ru_19.png",
    ] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
    ws
}

/// A fake that reads the line off whichever image arrived, by its base64, in
/// either wire form; a request without a known image gets "no image".
fn reading_fake() -> FakeServer {
    FakeServer::start(|r: &Request| {
        let user = &r.body["messages"][1];
        let sent = match &user["content"] {
            Value::Array(parts) => parts[1]["image_url"]["url"]
                .as_str()
                .and_then(|u| u.strip_prefix("data:image/png;base64,"))
                .map(str::to_owned),
            _ => user["images"][0].as_str().map(str::to_owned),
        };
        let line = LINES
            .iter()
            .find(|(name, _)| sent.as_deref() == Some(base64_of(name).as_str()));
        Reply::Text(line.map_or("no image", |(_, text)| text).to_owned())
    })
}

/// Asserts no file under `dir` holds any image's bytes, raw or in base64,
/// but the HTML reports, which embed thumbnails by design.
fn assert_no_bytes(dir: &Path) {
    let mut needles = Vec::new();
    for (name, _) in LINES {
        let (raw, encoded) = (image_bytes(name), base64_of(name));
        let mid = raw.len() / 2;
        needles.push(raw[mid..mid + 48].to_vec());
        let mid = encoded.len() / 2;
        needles.push(encoded.as_bytes()[mid..mid + 64].to_vec());
    }
    let mut seen = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_some_and(|e| e == "html") {
            continue;
        }
        let text = std::fs::read(&path).unwrap();
        seen += 1;
        for needle in &needles {
            assert!(
                !text.windows(needle.len()).any(|w| w == needle.as_slice()),
                "{} holds an image's bytes",
                path.display()
            );
        }
    }
    assert!(seen > 0, "nothing under {}", dir.display());
}

/// The newest HTML report's text.
fn html_report(dir: &Path) -> String {
    let mut pages: Vec<_> = std::fs::read_dir(dir.join("results/reports"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .collect();
    pages.sort();
    std::fs::read_to_string(pages.last().expect("an HTML report")).unwrap()
}

/// Each record passed and names its image by path and digest.
fn assert_records_name_images(records: &[Value]) {
    assert_eq!(records.len(), 2);
    for r in records {
        assert_eq!(r["passed"], true, "{r:#}");
        let (name, _) = LINES[r["instance"].as_u64().unwrap() as usize];
        assert_eq!(
            r["messages"][1]["images"],
            json!([{
                "path": format!("{RECORDED_DIR}/{name}"),
                "mime": "image/png",
                "sha256": sha256_hex(&image_bytes(name)),
                "size": image_bytes(name).len(),
            }]),
            "{r:#}"
        );
    }
}

#[test]
fn openai_gets_data_urls_and_only_digests_are_kept() {
    let fake = reading_fake();
    let ws = ocr_workspace();
    let model = format!("openai:vision@{}", fake.openai_base());
    ws.run_ok(&["specs/ocr_images.toml", "-m", &model, "--bless"]);

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let mut urls: Vec<&str> = Vec::new();
    for r in &requests {
        let messages = r.body["messages"].as_array().unwrap();
        assert_eq!(
            messages[0],
            json!({"role": "system", "content": "You transcribe printed text."})
        );
        let parts = messages[1]["content"].as_array().unwrap();
        assert_eq!(parts.len(), 2, "{parts:#?}");
        assert_eq!(parts[0], json!({"type": "text", "text": PROMPT}));
        assert_eq!(parts[1]["type"], "image_url");
        urls.push(parts[1]["image_url"]["url"].as_str().unwrap());
    }
    urls.sort_unstable();
    let mut want: Vec<String> = LINES
        .iter()
        .map(|(name, _)| format!("data:image/png;base64,{}", base64_of(name)))
        .collect();
    want.sort_unstable();
    assert_eq!(
        urls, want,
        "each instance's own image, base64 in a data: URL"
    );
    assert_records_name_images(&ws.last_journal());
    let page = html_report(ws.path());
    assert!(
        page.contains(&format!("data:image/png;base64,{}", base64_of("en_41.png"))),
        "a thumbnail"
    );
    let caption = format!("{RECORDED_DIR}/en_41.png · image/png · 2825 bytes · sha256 ");
    assert!(page.contains(&caption), "a caption");

    // A rerun asks nothing: the cache key holds the digests, which did not change.
    ws.run_ok(&["specs/ocr_images.toml", "-m", &model]);
    assert_eq!(fake.count(), 2, "a rerun is answered from the cache");
    let (code, out) =
        run(harness(ws.path()).args(["check", "specs", "--bless", "--golden", "golden"]));
    assert_eq!(code, 0, "{out}");
    let instances =
        std::fs::read_to_string(ws.path().join("golden/ocr_images/instances.jsonl")).unwrap();
    assert!(instances.contains(&sha256_hex(&image_bytes("en_41.png"))));
    // Replay answers from the transcript without any image.
    ws.run_ok(&["specs/ocr_images.toml", "-m", "replay:vision"]);
    assert_records_name_images(&ws.last_journal());
    assert_no_bytes(&ws.path().join("results"));
    assert_no_bytes(&ws.path().join("golden"));
}

#[test]
fn ollama_gets_base64_in_the_message_images() {
    let fake = reading_fake();
    let ws = ocr_workspace();
    let model = format!("ollama:vision@{}", fake.ollama_base());
    ws.run_ok(&["specs/ocr_images.toml", "-m", &model]);

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let mut sent: Vec<Value> = requests
        .iter()
        .map(|r| r.body["messages"][1].clone())
        .collect();
    sent.sort_by_key(|m| m["images"][0].as_str().unwrap_or_default().to_owned());
    let mut want: Vec<Value> = LINES
        .iter()
        .map(|(name, _)| json!({"role": "user", "content": PROMPT, "images": [base64_of(name)]}))
        .collect();
    want.sort_by_key(|m| m["images"][0].as_str().unwrap_or_default().to_owned());
    assert_eq!(sent, want);
    for r in &requests {
        assert!(
            r.body["messages"][0].get("images").is_none(),
            "no images on the system message"
        );
    }
    assert_records_name_images(&ws.last_journal());
    assert_no_bytes(&ws.path().join("results"));
}

#[test]
fn a_parquet_column_of_image_bytes_is_sent_like_a_file() {
    let fake = reading_fake();
    let ws = Workspace::new();
    let (en, ru) = (image_bytes(LINES[0].0), image_bytes(LINES[1].0));
    crate::common::parquet_file::write_images(
        &ws.path().join("specs/lines.parquet"),
        &[
            (LINES[0].1, &en, "en_41.png"),
            (LINES[1].1, &ru, "ru_19.png"),
        ],
    );
    ws.write(
        "specs/hub_images.toml",
        &format!(
            "[dataset]\npath = \"lines.parquet\"\n\n[prompt]\nsystem = \"s\"\nuser = \"{PROMPT}\"\nimages = [\"{{{{ image }}}}\"]\n\n[[verify]]\nrule = \"exact\"\nexpected = \"text\"\n"
        ),
    );
    let model = format!("openai:vision@{}", fake.openai_base());
    ws.run_ok(&["specs/hub_images.toml", "-m", &model]);
    let records = ws.last_journal();
    assert_eq!(records.len(), 2);
    for r in &records {
        assert_eq!(r["passed"], true, "the fake read the right image: {r:#}");
        let image = &r["messages"][1]["images"][0];
        assert!(image["path"].as_str().unwrap().ends_with(".png"), "{image}");
        assert_eq!(
            r["vars"]["image"], image["path"],
            "the variable is the file's path"
        );
    }
    assert_no_bytes(&ws.path().join("results"));
}

#[test]
fn an_image_over_the_limit_fails_check_at_its_key() {
    let ws = Workspace::new();
    ws.write(
        "specs/big.toml",
        "runs = 1\n\n[prompt]\nuser = \"What is this?\"\nimages = [\"big.png\"]\n\n[[verify]]\nrule = \"exact\"\nexpected = \"x\"\n",
    );
    // A sparse file: a PNG signature, then zeros up to one byte over 20 MiB.
    let big = std::fs::File::create(ws.path().join("specs/big.png")).unwrap();
    std::io::Write::write_all(&mut &big, b"\x89PNG\r\n\x1a\n").unwrap();
    big.set_len(MAX_IMAGE_BYTES + 1).unwrap();
    let (code, out) = run(harness(ws.path()).args(["check", "specs/big.toml"]));
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("specs/big.toml:5:11"), "{out}");
    assert!(
        out.contains("image `specs/big.png` is 20971521 bytes, over the limit of 20971520 bytes"),
        "{out}"
    );
}

#[test]
fn the_report_shows_a_capped_thumbnail_and_a_hostile_name_as_text() {
    let Some(mut b) = crate::common::browser::Browser::launch() else {
        return;
    };
    let fake = reading_fake();
    let ws = ocr_workspace();
    // A file name that is markup: it must show as text in the caption.
    let hostile = "<img src=x onerror=window.__pwned=1>.png";
    let images = ws.path().join("datasets/ocr_mini/images");
    std::fs::copy(images.join("en_41.png"), images.join(hostile)).unwrap();
    let row = json!({"id": "en_41", "text": LINES[0].1, "image": format!("images/{hostile}")});
    ws.write("datasets/ocr_mini/lines.jsonl", &format!("{row}\n"));
    let model = format!("openai:vision@{}", fake.openai_base());
    ws.run_ok(&["specs/ocr_images.toml", "-m", &model]);

    let dir = ws.path().join("results/reports");
    let page = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "html"))
        .unwrap();
    b.viewport(1280, 900);
    b.open(&page);
    b.eval("document.querySelector('#tabs [data-view=instances]').click()");
    b.wait_for("document.querySelectorAll('#view-instances .vrow').length > 0");
    b.eval("document.querySelector('#view-instances .vrow').click()");
    b.wait_for("!document.getElementById('drill').hidden");
    b.wait_for(
        "[...document.querySelectorAll('#drill-body .thumbs img')].every((i) => i.complete)",
    );
    b.screenshot(&crate::common::browser::artifacts().join("media_drill_1280.png"));
    let shown = b.eval(
        "[...document.querySelectorAll('#drill-body img')].map((i) => { const r = i.getBoundingClientRect(); \
         return [i.naturalWidth > 0, r.width > 0 && r.width <= 260, r.height > 0 && r.height <= 160]; })",
    );
    assert_eq!(
        shown,
        json!([[true, true, true]]),
        "one thumbnail, drawn, within the cap"
    );
    let caption = b.eval("document.querySelector('#drill-body .thumbs figcaption').textContent");
    let caption = caption.as_str().unwrap();
    assert!(caption.contains(hostile), "{caption}");
    assert!(
        caption.contains(" · image/png · 2825 bytes · sha256 "),
        "{caption}"
    );
    assert_eq!(b.eval("window.__pwned === undefined"), json!(true));
    assert_eq!(b.errors(), Vec::<String>::new(), "console errors");
    let page_only = b
        .requests()
        .iter()
        .all(|u| u.starts_with("file://") || u.starts_with("data:"));
    assert!(page_only, "network requests: {:?}", b.requests());
}

#[test]
fn jpeg_and_webp_are_typed_by_their_bytes_not_their_names() {
    let ws = Workspace::new();
    // tests/fixtures/media: a 24x12 box as JPEG, as WebP, and as JPEG named `.png`.
    let names = ["box.jpg", "box.webp", "box_named_png.png"];
    for name in names {
        ws.copy_fixture(&format!("media/{name}"));
    }
    let list = names.map(|n| format!("{n:?}")).join(", ");
    ws.write(
        "specs/types.toml",
        &format!("runs = 1\n\n[prompt]\nuser = \"What is this?\"\nimages = [{list}]\n\n[[verify]]\nrule = \"exact\"\nexpected = \"x\"\n"),
    );
    let (code, out) = run(harness(ws.path()).args(["show", "specs/types.toml", "--json"]));
    assert_eq!(code, 0, "{out}");
    let instance: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    let images = instance["messages"][0]["images"].as_array().unwrap();
    let typed: Vec<(&str, &str)> = images
        .iter()
        .map(|i| (i["path"].as_str().unwrap(), i["mime"].as_str().unwrap()))
        .collect();
    assert_eq!(
        typed,
        [
            ("box.jpg", "image/jpeg"),
            ("box.webp", "image/webp"),
            ("box_named_png.png", "image/jpeg"),
        ]
    );
}
