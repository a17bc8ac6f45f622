//! QA generation: the answer's pairs, read leniently in shape (a `pairs`
//! object, any object holding one list, or a bare list) and strictly in
//! content (each pair a non-empty question and answer).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::extract::{first_json_value, strip_think};

/// One question with its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct QaPair {
    /// The question.
    pub question: String,
    /// The reference answer.
    pub answer: String,
}

/// Why a model's answer to a synth step is not what the step asked for; the
/// step is asked again, and the last reason is kept in the journal.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum AnswerError {
    /// No JSON object or array in the answer.
    #[error("no JSON in the answer")]
    NoJson,
    /// The JSON found does not parse (serde's message).
    #[error("the answer's JSON does not parse: {0}")]
    Json(String),
    /// An object without the list asked for, or with several lists.
    #[error("the answer has no `{0}` list")]
    NoList(&'static str),
    /// JSON that is neither an object nor a list.
    #[error("the answer is not a JSON object or list")]
    NotListOrObject,
    /// A list with no question-answer pair in it.
    #[error("none of the {0} items is a question-answer pair")]
    NoPairs(usize),
    /// A rating list of the wrong length.
    #[error("{got} ratings for {want} pairs")]
    RatingCount {
        /// Ratings given.
        got: usize,
        /// Pairs in the batch.
        want: usize,
    },
    /// A rating that is not a number (1-based position, the item as JSON).
    #[error("rating {0} is not a number: {1}")]
    RatingNotNumber(usize, String),
    /// A rating outside 1-10 (1-based position, the value).
    #[error("rating {0} is {1}, outside 1-10")]
    RatingOutOfRange(usize, f64),
    /// A summary with no text.
    #[error("empty")]
    Empty,
}

/// The JSON value of an answer: the first object or array in it, after any `<think>` block.
pub(crate) fn answer_json(text: &str) -> Result<Value, AnswerError> {
    let json = first_json_value(strip_think(text)).ok_or(AnswerError::NoJson)?;
    serde_json::from_str(json).map_err(|e| AnswerError::Json(e.to_string()))
}

/// The list an answer carries: itself, its `key` field, or its only list field.
pub(crate) fn answer_list(value: Value, key: &'static str) -> Result<Vec<Value>, AnswerError> {
    match value {
        Value::Array(items) => Ok(items),
        Value::Object(mut map) => {
            if let Some(Value::Array(items)) = map.remove(key) {
                return Ok(items);
            }
            let mut lists = map.into_iter().filter_map(|(_, v)| match v {
                Value::Array(items) => Some(items),
                _ => None,
            });
            match (lists.next(), lists.next()) {
                (Some(items), None) => Ok(items),
                _ => Err(AnswerError::NoList(key)),
            }
        }
        _ => Err(AnswerError::NotListOrObject),
    }
}

/// The pairs of a generation answer, and how many list items were not pairs.
/// No usable pair at all is an error, so the answer is asked again.
pub(crate) fn parse_pairs(text: &str) -> Result<(Vec<QaPair>, usize), AnswerError> {
    let items = answer_list(answer_json(text)?, "pairs")?;
    let total = items.len();
    let pairs: Vec<QaPair> = items
        .into_iter()
        .filter_map(|item| {
            let field = |k: &str| Some(item.get(k)?.as_str()?.trim().to_owned());
            let (question, answer) = (field("question")?, field("answer")?);
            (!question.is_empty() && !answer.is_empty()).then_some(QaPair { question, answer })
        })
        .collect();
    if pairs.is_empty() {
        return Err(AnswerError::NoPairs(total));
    }
    Ok((pairs.clone(), total - pairs.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_in_every_accepted_shape() {
        let pair = QaPair {
            question: "Что такое X?".into(),
            answer: "Буква.".into(),
        };
        for text in [
            r#"{"pairs": [{"question": "Что такое X?", "answer": "Буква."}]}"#,
            r#"[{"question": " Что такое X? ", "answer": "Буква."}]"#,
            "<think>hmm</think>```json\n{\"qa\": [{\"question\": \"Что такое X?\", \"answer\": \"Буква.\"}]}\n```",
        ] {
            assert_eq!(parse_pairs(text), Ok((vec![pair.clone()], 0)), "{text}");
        }
        let mixed =
            r#"{"pairs": [{"question": "Что такое X?", "answer": "Буква."}, {"question": ""}, 3]}"#;
        assert_eq!(parse_pairs(mixed), Ok((vec![pair], 2)));
    }

    #[test]
    fn malformed_answers_are_errors() {
        for text in [
            "Sure! Here are your pairs.",
            r#"{"pairs": [{"question": "q", "answer": "a"}"#,
            r#"{"pairs": []}"#,
            r#"{"a": [], "b": []}"#,
            r#"{"pairs": [{"q": "x"}]}"#,
        ] {
            assert!(parse_pairs(text).is_err(), "{text}");
        }
    }
}
