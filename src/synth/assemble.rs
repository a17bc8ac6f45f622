//! Between and after the model steps: chunk files, reading the journal's
//! answers into pairs and ratings (every failure counted and named in the
//! report), the threshold and de-duplication filters, and the output files.

use serde::Serialize;
use serde_json::json;

use super::exec::SynthJournal;
use super::generate::{QaPair, parse_pairs};
use super::output::{WorkDir, write_json, write_jsonl};
use super::pipeline::Pipeline;
use super::read::Document;
use super::{ChunkedDoc, SynthError, SynthOptions, SynthReport, chunk, dedup, rate};

/// A generated pair on its way to the final file.
#[derive(Debug, Clone)]
pub(super) struct Candidate {
    /// Index of its document.
    pub doc: usize,
    /// Index of its chunk in the document.
    pub chunk: usize,
    /// The pair.
    pub pair: QaPair,
    /// Its rating, once rated.
    pub rating: Option<f64>,
}

/// One line of the final JSONL.
#[derive(Debug, Serialize)]
struct FinalRow<'a> {
    question: &'a str,
    answer: &'a str,
    rating: f64,
    source: String,
    document: &'a str,
    chunk: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<serde_json::Value>,
}

/// Cuts every document into chunks and writes `output/documents.jsonl`
/// (name, source, format, text) and `output/<doc>_<i>.txt`.
pub(super) fn chunk_documents(
    documents: Vec<Document>,
    pipeline: &Pipeline,
    work: &WorkDir,
) -> Result<Vec<ChunkedDoc>, SynthError> {
    let config = &pipeline.chunking;
    // Both were checked when the pipeline loaded.
    let bpe = config.tokenizer()?;
    let max_tokens = config.max_tokens()?;
    let mut rows = Vec::new();
    let mut out = Vec::new();
    for doc in documents {
        let chunks = chunk::chunk_text(&doc.text, bpe, max_tokens, config.overlap as usize);
        for c in &chunks {
            let path = work.output(&format!("{}_{}.txt", doc.name, c.index));
            super::output::write_atomic(&path, c.text.as_bytes())?;
        }
        rows.push(json!({
            "name": doc.name, "source": doc.source, "format": doc.format,
            "tokens": chunks.last().map_or(0, |c| c.tokens.1), "chunks": chunks.len(), "text": doc.text,
        }));
        out.push(ChunkedDoc { doc, chunks });
    }
    write_jsonl(&work.output("documents.jsonl"), &rows)?;
    Ok(out)
}

/// The usable answer of the request `key`, or `None` with its failure added to `errors`.
pub(super) fn answer(
    journal: &SynthJournal,
    key: &str,
    errors: &mut Vec<String>,
) -> Option<String> {
    let entry = journal.get(key)?;
    match &entry.error {
        Some(e) => {
            errors.push(format!("{}: {e}", entry.label));
            None
        }
        None => entry.response.clone(),
    }
}

/// Reads the generation answers (`keys[i]` for chunk `chunks[i]` = (doc, chunk))
/// into candidates and writes `generated/<doc>.json`.
pub(super) fn generated(
    docs: &[ChunkedDoc],
    summaries: &[String],
    chunks: &[(usize, usize)],
    keys: &[String],
    journal: &SynthJournal,
    work: &WorkDir,
    report: &mut SynthReport,
) -> Result<Vec<Candidate>, SynthError> {
    let mut candidates = Vec::new();
    let mut per_doc: Vec<Vec<serde_json::Value>> = vec![Vec::new(); docs.len()];
    for (&(doc, chunk), key) in chunks.iter().zip(keys) {
        let text = answer(journal, key, &mut report.errors);
        let parsed = text.as_deref().map(parse_pairs);
        let pairs = match parsed {
            Some(Ok((pairs, invalid))) => {
                report.invalid_items += invalid;
                pairs
            }
            _ => Vec::new(),
        };
        report.generated += pairs.len();
        per_doc[doc].push(json!({
            "chunk": chunk, "pairs": pairs,
            "error": journal.get(key).and_then(|e| e.error.clone()),
        }));
        candidates.extend(pairs.into_iter().map(|pair| Candidate {
            doc,
            chunk,
            pair,
            rating: None,
        }));
    }
    for ((d, chunks), summary) in docs.iter().zip(per_doc).zip(summaries) {
        let value = json!({
            "document": d.doc.name, "source": d.doc.source, "summary": summary, "chunks": chunks,
        });
        write_json(&work.stage_file("generated", &d.doc.name), &value)?;
    }
    Ok(candidates)
}

/// Candidate indices in rating batches of at most `size`, never mixing documents.
pub(super) fn batches(candidates: &[Candidate], size: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        match out.last_mut() {
            Some(b) if b.len() < size && candidates[b[0]].doc == c.doc => b.push(i),
            _ => out.push(vec![i]),
        }
    }
    out
}

/// Sets each candidate's rating from its batch's answer; pairs of failed batches stay unrated.
pub(super) fn rated(
    mut candidates: Vec<Candidate>,
    batches: &[Vec<usize>],
    keys: &[String],
    journal: &SynthJournal,
    report: &mut SynthReport,
) -> Vec<Candidate> {
    for (batch, key) in batches.iter().zip(keys) {
        let ratings = answer(journal, key, &mut report.errors)
            .and_then(|t| rate::parse_ratings(&t, batch.len()).ok());
        match ratings {
            Some(ratings) => {
                for (&i, r) in batch.iter().zip(ratings) {
                    candidates[i].rating = Some(r);
                }
            }
            None => report.unrated += batch.len(),
        }
    }
    candidates
}

/// Filters by threshold, de-duplicates, and writes `cleaned/`, `final/` and the output file.
pub(super) fn finish(
    candidates: Vec<Candidate>,
    docs: &[ChunkedDoc],
    pipeline: &Pipeline,
    opts: &SynthOptions,
    work: &WorkDir,
    report: &mut SynthReport,
) -> Result<(), SynthError> {
    let threshold = pipeline.threshold();
    let passing: Vec<(Candidate, f64)> = candidates
        .into_iter()
        .filter_map(|c| {
            let r = c.rating?;
            if r >= threshold {
                Some((c, r))
            } else {
                report.below_threshold += 1;
                None
            }
        })
        .collect();
    let items: Vec<(&str, f64)> = passing
        .iter()
        .map(|(c, r)| (c.pair.question.as_str(), *r))
        .collect();
    let keep = dedup::keep(&items, pipeline.dedup.threshold);
    let kept: Vec<&(Candidate, f64)> = passing
        .iter()
        .zip(&keep)
        .filter_map(|(c, k)| k.then_some(c))
        .collect();
    report.duplicates = passing.len() - kept.len();
    report.kept = kept.len();
    for (di, d) in docs.iter().enumerate() {
        let rows: Vec<_> = kept
            .iter()
            .filter(|(c, _)| c.doc == di)
            .map(|(c, r)| json!({"question": c.pair.question, "answer": c.pair.answer, "rating": r, "chunk": c.chunk}))
            .collect();
        write_json(&work.stage_file("cleaned", &d.doc.name), &rows)?;
    }
    let rows: Vec<FinalRow> = kept
        .iter()
        .map(|(c, r)| {
            let d = &docs[c.doc];
            let chunk = &d.chunks[c.chunk];
            FinalRow {
                question: &c.pair.question,
                answer: &c.pair.answer,
                rating: *r,
                source: d.doc.source.display().to_string(),
                document: &d.doc.name,
                chunk: c.chunk,
                metadata: opts.metadata.then(|| {
                    json!({
                        "model": opts.model.name, "pipeline_sha256": pipeline.sha256,
                        "format": d.doc.format, "chunk_bytes": chunk.bytes, "chunk_tokens": chunk.tokens,
                        "chunk_file": format!("{}_{}.txt", d.doc.name, c.chunk),
                    })
                }),
            }
        })
        .collect();
    let name = opts
        .out
        .file_name()
        .map_or_else(|| "qa.jsonl".into(), |n| n.to_string_lossy().into_owned());
    write_jsonl(&work.final_file(&name), &rows)?;
    write_jsonl(&opts.out, &rows)?;
    Ok(())
}
