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

use super::pipeline_file::{PipelineDef, StageDef};

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
