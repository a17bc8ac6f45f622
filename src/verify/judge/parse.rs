//! Reading a judge's answer: the first JSON object with `level` (and
//! `reasoning`), wherever it sits — bare, fenced, or after some prose.
//! A level that is not one of the rubric's is an error, never rounded.

use serde_json::Value;

use super::error::JudgeError;
use super::rubric::Rubric;
use crate::extract::{first_json_object, strip_think};

/// One parsed judgement.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeAnswer {
    /// The chosen level, one of the rubric's.
    pub level: i64,
    /// The judge's explanation (may be empty).
    pub reasoning: String,
}

/// Parses `text` against `rubric`; the error says what was wrong, for the re-ask log and records.
pub(crate) fn parse_answer(text: &str, rubric: &Rubric) -> Result<JudgeAnswer, JudgeError> {
    let body = strip_think(text);
    let json = first_json_object(body).ok_or(JudgeError::NoJson)?;
    let value: Value = serde_json::from_str(json).map_err(|e| JudgeError::Json(e.to_string()))?;
    let level = match value.get("level") {
        None => return Err(JudgeError::NoLevel),
        Some(v) => level_of(v).ok_or_else(|| JudgeError::LevelNotInteger(v.to_string()))?,
    };
    if rubric.get(level).is_none() {
        return Err(JudgeError::NotInRubric {
            level,
            levels: rubric
                .numbers()
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let reasoning = match value.get("reasoning") {
        Some(Value::String(s)) => s.trim().to_owned(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    Ok(JudgeAnswer { level, reasoning })
}

/// An integer level: `4`, `4.0` or `"4"` (small models quote numbers); `4.5` is not one.
fn level_of(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn five() -> Rubric {
        crate::verify::judge::rubric::numbered(1..=5)
    }

    #[test]
    fn bare_fenced_and_wrapped_json_parse() {
        let r = five();
        let bare = parse_answer(r#"{"reasoning": "точно", "level": 4}"#, &r).unwrap();
        assert_eq!((bare.level, bare.reasoning.as_str()), (4, "точно"));
        let fenced = "```json\n{\"reasoning\": \"ok\", \"level\": 5}\n```";
        assert_eq!(parse_answer(fenced, &r).unwrap().level, 5);
        let prose =
            "Let me think. The answer is fine.\n{\"level\": \"3\", \"reasoning\": \"so-so\"} Done.";
        assert_eq!(parse_answer(prose, &r).unwrap().level, 3);
        let think = "<think>{\"level\": 1}</think>{\"level\": 2, \"reasoning\": \"\"}";
        assert_eq!(parse_answer(think, &r).unwrap().level, 2);
        assert_eq!(parse_answer(r#"{"level": 4.0}"#, &r).unwrap().level, 4);
    }

    #[test]
    fn out_of_range_and_malformed_answers_are_errors() {
        let r = five();
        let e = parse_answer(r#"{"reasoning": "x", "level": 7}"#, &r).unwrap_err();
        assert_eq!(
            e.to_string(),
            "level 7 is not in the rubric (5, 4, 3, 2, 1)"
        );
        assert!(parse_answer(r#"{"level": 0}"#, &r).is_err());
        assert!(matches!(
            parse_answer(r#"{"level": 4.5}"#, &r),
            Err(JudgeError::LevelNotInteger(_))
        ));
        assert_eq!(
            parse_answer(r#"{"reasoning": "x"}"#, &r),
            Err(JudgeError::NoLevel)
        );
        assert_eq!(parse_answer("Level: 4", &r), Err(JudgeError::NoJson));
        assert!(parse_answer("", &r).is_err());
    }
}
