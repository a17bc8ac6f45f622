//! The ranges of `in_range`, proven through the pipeline loader that applies
//! them (a file of its own: `pipeline` imports `in_range`, so its tests cannot
//! live there without a circle).

use std::path::Path;

use super::pipeline::{DEFAULT_PIPELINE, Pipeline};

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
