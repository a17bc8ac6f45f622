//! What a tool call hands back, measured and cut: the JSON length of a
//! result or a state counted without writing it (and without scanning past
//! the limit), and an error message cut to its limit.

use serde_json::Value;

/// The length of `value` as compact JSON text (as serde_json writes it)
/// when it is at most `max` bytes; `None` past `max`. Counted by a loop
/// without writing the text, and cut short: a string longer than `max` is
/// not even scanned, so a 1 MB result costs what a small one does.
pub(super) fn json_len_within(value: &Value, max: usize) -> Option<usize> {
    let mut total = 0usize;
    let mut todo = vec![value];
    while let Some(value) = todo.pop() {
        total += match value {
            Value::String(s) => string_len_within(s, max)?,
            Value::Array(items) => {
                todo.extend(items);
                2 + items.len().saturating_sub(1)
            }
            Value::Object(map) => {
                for (key, value) in map {
                    total += string_len_within(key, max)? + 1;
                    todo.push(value);
                }
                2 + map.len().saturating_sub(1)
            }
            Value::Number(n) => {
                let mut counted = Counted(0);
                // Writing to a counter cannot fail.
                let _ = std::fmt::Write::write_fmt(&mut counted, format_args!("{n}"));
                counted.0
            }
            Value::Bool(true) | Value::Null => 4,
            Value::Bool(false) => 5,
        };
        if total > max {
            return None;
        }
    }
    Some(total)
}

/// Counts the bytes written to it: a number's length without a `String`.
struct Counted(usize);

impl std::fmt::Write for Counted {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

/// The length of `text` as a JSON string, quotes and escapes included;
/// `None` when more than `max`.
fn string_len_within(text: &str, max: usize) -> Option<usize> {
    if text.len() + 2 > max {
        return None;
    }
    let escaped = |b: &u8| match b {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
        0..0x20 => 6,
        _ => 1,
    };
    let len = 2 + text.as_bytes().iter().map(escaped).sum::<usize>();
    (len <= max).then_some(len)
}

/// `text` cut to at most `max` bytes at a character boundary, saying how
/// much was cut.
pub(super) fn clip_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes more)", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_lengths_are_counted_as_serde_json_writes_and_cut_short() {
        let values = [
            json!(null),
            json!({"a": [1, -2.5, true, false, "x\"y\\z\n\u{1}é😀"], "b\tc": {}, "d": []}),
            json!([[], {}, "", 1e300, u64::MAX]),
        ];
        for value in values {
            let len = value.to_string().len();
            assert_eq!(json_len_within(&value, len), Some(len), "{value}");
            assert_eq!(json_len_within(&value, len - 1), None, "{value}");
        }
        let big = json!({ "s": "x".repeat(1_000_000) });
        let started = std::time::Instant::now();
        assert_eq!(json_len_within(&big, 65_536), None);
        assert!(started.elapsed() < std::time::Duration::from_millis(5));
    }

    #[test]
    fn long_messages_are_cut_at_a_character_and_say_how_much() {
        assert_eq!(clip_bytes("short", 10), "short");
        assert_eq!(clip_bytes("éééé", 3), "é… (6 bytes more)");
    }
}
