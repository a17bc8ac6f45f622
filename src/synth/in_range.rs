//! Every number a synth pipeline holds, with its range: one table, checked
//! once the file is read, each problem located at its value like a config's
//! (`crate::config`'s `in_range`), with the same ranges where a key means
//! the same (a temperature, `top_p`, tokens, `attempts`). Outside them a
//! step would send a request the server refuses for every chunk
//! (`temperature = 9`), never finish (`batch_size = 0`) or keep nothing
//! (`threshold = 11`). `inf` and `nan` anywhere are refused before this, by
//! [`crate::format::locate::SourceMap::non_finite_floats`].

use crate::format::locate::Key;
use crate::format::range::{ATTEMPTS, Bounds, Number, TEMPERATURE, TOKENS, TOP_P};

use super::pipeline::{PipelineDef, StageDef};

/// `[generation] num_pairs`: as `--num-pairs`, pairs asked per chunk.
pub(super) const NUM_PAIRS: Bounds = Bounds::Count(1, 1000);
/// `[rating] batch_size`: pairs rated in one request.
const BATCH_SIZE: Bounds = Bounds::Count(1, 1000);
/// `[rating] threshold`: as `--threshold`, a rating on the 1-10 scale.
pub(super) const RATING: Bounds = Bounds::Within(1.0, 10.0);
/// `[dedup] threshold`: a normalized similarity; at 0 every question
/// would be one.
const SIMILARITY: Bounds = Bounds::Above(0.0, 1.0);

/// One number found out of range: the path of its key and why.
pub(super) type Problem = (Vec<Key<'static>>, String);

/// Every number of `def` outside its range, in the order of the shipped
/// file: `[chunking]`, the steps, `[dedup]`. How `[chunking]`'s numbers fit
/// together (room for text beyond the overlap) is the chunker's to say.
pub(super) fn problems(def: &PipelineDef) -> Vec<Problem> {
    let c = &def.chunking;
    let mut checks: Vec<(Vec<Key<'static>>, Option<Number>, Bounds)> = vec![
        (
            vec!["chunking".into(), "max_seq_length".into()],
            Some(c.max_seq_length.into()),
            TOKENS,
        ),
        (
            vec!["chunking".into(), "max_generation_tokens".into()],
            Some(c.max_generation_tokens.into()),
            TOKENS,
        ),
    ];
    for (name, stage) in [
        ("summary", &def.summary),
        ("generation", &def.generation),
        ("rating", &def.rating),
    ] {
        checks.extend(stage_checks(name, stage));
    }
    checks.push((
        vec!["dedup".into(), "threshold".into()],
        Some(def.dedup.threshold.into()),
        SIMILARITY,
    ));
    checks
        .into_iter()
        .filter_map(|(path, value, bounds)| {
            let key = match path.last() {
                Some(Key::Name(key)) => *key,
                _ => "value",
            };
            let problem = value.and_then(|v| bounds.problem(key, v))?;
            Some((path, problem))
        })
        .collect()
}

/// The numbers of the step `[name]`; a key the step does not take is
/// refused before, so each is checked wherever it is set.
fn stage_checks(
    name: &'static str,
    s: &StageDef,
) -> [(Vec<Key<'static>>, Option<Number>, Bounds); 7] {
    let at = |key: &'static str| vec![Key::Name(name), Key::Name(key)];
    [
        (at("temperature"), Some(s.temperature.into()), TEMPERATURE),
        (at("top_p"), s.top_p.map(Number::from), TOP_P),
        (at("max_tokens"), Some(s.max_tokens.into()), TOKENS),
        (at("attempts"), s.attempts.map(Number::from), ATTEMPTS),
        (at("num_pairs"), s.num_pairs.map(Number::from), NUM_PAIRS),
        (at("batch_size"), s.batch_size.map(Number::from), BATCH_SIZE),
        (at("threshold"), s.threshold.map(Number::from), RATING),
    ]
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::pipeline::{DEFAULT_PIPELINE, Pipeline};

    /// A line of the shipped pipeline, what replaces it, what the error says.
    const BAD: &[(&str, &str, &str)] = &[
        (
            "max_seq_length = 2048",
            "max_seq_length = 0",
            "max_seq_length = 0 is out of range: max_seq_length takes a whole number of 1 or more",
        ),
        (
            "max_generation_tokens = 512",
            "max_generation_tokens = 0",
            "max_generation_tokens = 0 is out of range",
        ),
        (
            "max_seq_length = 2048",
            "max_seq_length = 5000000000",
            "u32",
        ),
        (
            "temperature = 0.7",
            "temperature = 2.5",
            "temperature takes a number from 0 to 2",
        ),
        (
            "temperature = 0.7",
            "temperature = -0.1",
            "temperature = -0.1 is out of range",
        ),
        (
            "top_p = 0.95",
            "top_p = 0",
            "top_p takes a number above 0 and at most 1",
        ),
        ("top_p = 0.95", "top_p = 1.5", "top_p = 1.5 is out of range"),
        (
            "max_tokens = 512",
            "max_tokens = 0",
            "max_tokens = 0 is out of range",
        ),
        (
            "attempts = 3                 #",
            "attempts = 0                 #",
            "attempts takes a whole number from 1 to 100",
        ),
        (
            "num_pairs = 25",
            "num_pairs = 0",
            "num_pairs takes a whole number from 1 to 1000",
        ),
        (
            "num_pairs = 25",
            "num_pairs = 1001",
            "num_pairs = 1001 is out of range",
        ),
        (
            "batch_size = 4",
            "batch_size = 0",
            "batch_size takes a whole number from 1 to 1000",
        ),
        (
            "threshold = 1.0              # keep",
            "threshold = 11               # keep",
            "threshold takes a number from 1 to 10",
        ),
        (
            "threshold = 1.0              # keep",
            "threshold = 0.5              # keep",
            "threshold = 0.5 is out of range",
        ),
        (
            "threshold = 0.9",
            "threshold = 0",
            "threshold takes a number above 0 and at most 1",
        ),
        (
            "threshold = 0.9",
            "threshold = 1.5",
            "threshold = 1.5 is out of range",
        ),
        // Non-finite anywhere, before any key is read.
        (
            "temperature = 0.7",
            "temperature = nan",
            "nan is not a finite number",
        ),
        ("top_p = 0.95", "top_p = inf", "inf is not a finite number"),
        (
            "threshold = 0.9",
            "threshold = -inf",
            "-inf is not a finite number",
        ),
        (
            "threshold = 0.9",
            "threshold = 1e999",
            "1e999 is not a finite number",
        ),
    ];

    #[test]
    fn every_number_of_a_pipeline_is_checked_and_located_at_its_value() {
        for &(line, bad, says) in BAD {
            assert_eq!(DEFAULT_PIPELINE.matches(line).count(), 1, "{line}");
            let text = DEFAULT_PIPELINE.replacen(line, bad, 1);
            let Err(e) = Pipeline::parse(&text, Path::new("p.toml")) else {
                panic!("{bad} is taken");
            };
            let d = e.diagnostic();
            let value = bad
                .split('=')
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap();
            let at = text.find(bad).unwrap() + bad.find(value).unwrap();
            let line_no = text[..at].matches('\n').count() + 1;
            let column = at - text[..at].rfind('\n').map_or(0, |n| n + 1) + 1;
            assert_eq!(
                (d.location.line, d.location.column),
                (line_no, column),
                "{bad}: {e}"
            );
            assert!(d.message.contains(says), "{bad}: {e}");
            assert_eq!(d.location.file, Path::new("p.toml"));
        }
    }

    #[test]
    fn the_edges_of_each_range_are_taken() {
        let good = [
            ("temperature = 0.7", "temperature = 2"),
            ("top_p = 0.95", "top_p = 1"),
            ("num_pairs = 25", "num_pairs = 1000"),
            ("batch_size = 4", "batch_size = 1"),
            (
                "threshold = 1.0              # keep",
                "threshold = 10               # keep",
            ),
            ("threshold = 0.9", "threshold = 1.0"),
        ];
        for (line, edge) in good {
            let text = DEFAULT_PIPELINE.replacen(line, edge, 1);
            if let Err(e) = Pipeline::parse(&text, Path::new("p.toml")) {
                panic!("{edge}: {e}");
            }
        }
    }
}
