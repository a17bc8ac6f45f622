//! How deep a JSON value nests, and the limit on it where values enter.
//!
//! A model's tool-call arguments, a tool's result, an episode's state and a
//! spec's data (`[data]`, generated variables, dataset rows) are measured
//! where they come in and refused past [`MAX_DEPTH`] levels, with the named
//! failure `too_deep`. Everything after that (Rhai conversions, the journal,
//! golden diffs, the reports) then walks at most that deep plus a record's
//! own few levels, so no recursion there can run out of stack, and every
//! journal line stays readable. The measures themselves are loops: a value
//! of any depth is measured without recursion.

use serde_json::Value;

/// The deepest a value entering the harness may nest: an object or array
/// of plain values is 1 level. Real tool arguments and states stay under
/// 10; a journal line adds under 10 of its own.
pub(crate) const MAX_DEPTH: usize = 64;

/// The nesting depth of `value`: 0 for a plain value, 1 for an array or an
/// object (empty or holding plain values), one more per level inside.
pub(crate) fn value_depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut todo = vec![(value, 0usize)];
    while let Some((value, depth)) = todo.pop() {
        match value {
            Value::Array(items) => todo.extend(items.iter().map(|v| (v, depth + 1))),
            Value::Object(map) => todo.extend(map.values().map(|v| (v, depth + 1))),
            _ => continue,
        }
        deepest = deepest.max(depth + 1);
    }
    deepest
}

/// The nesting depth of JSON text, counted as [`value_depth`] counts it
/// (brackets inside strings do not count); for text that is not JSON, the
/// deepest its brackets go.
pub(crate) fn text_depth(text: &[u8]) -> usize {
    crate::files::json_nesting(text)
}

/// What a refusal says of a value nested past [`MAX_DEPTH`]: `what_nests`
/// (such as "the arguments nest") and how deep it went.
pub(crate) fn too_deep_text(what_nests: &str, depth: usize) -> String {
    format!("{what_nests} {depth} levels deep, deeper than the {MAX_DEPTH} levels a value may have")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `[[[...1...]]]` nested `n` deep, as text.
    fn nested_text(n: usize) -> String {
        format!("{}1{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn depths_of_values_and_texts_agree() {
        let cases: [(Value, usize); 6] = [
            (json!(1), 0),
            (json!("[[{"), 0),
            (json!([]), 1),
            (json!({"a": [1, {"b": "]]"}], "c": {}}), 3),
            (json!([[], [[[]]], {}]), 4),
            (serde_json::from_str(&nested_text(100)).unwrap(), 100),
        ];
        for (value, depth) in cases {
            assert_eq!(value_depth(&value), depth, "{value}");
            assert_eq!(text_depth(value.to_string().as_bytes()), depth, "{value}");
        }
        assert_eq!(text_depth(br#"{"a": "\"[[", "b": [1]}"#), 2);
    }

    #[test]
    fn any_depth_is_measured_without_recursion() {
        let text = nested_text(1_000_000);
        assert_eq!(text_depth(text.as_bytes()), 1_000_000);
        // Built by hand: serde_json would refuse it; dropped by hand, as
        // Value's own drop recurses.
        let mut value = json!(1);
        for _ in 0..100_000 {
            value = Value::Array(vec![value]);
        }
        assert_eq!(value_depth(&value), 100_000);
        let mut todo = vec![value];
        while let Some(v) = todo.pop() {
            if let Value::Array(items) = v {
                todo.extend(items);
            }
        }
        assert_eq!(
            too_deep_text("the arguments nest", 65),
            "the arguments nest 65 levels deep, deeper than the 64 levels a value may have"
        );
    }
}
