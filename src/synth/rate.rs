//! Rating: pairs go to the model in batches; the answer must hold exactly
//! one 1-10 rating per pair, in order (bare numbers, or objects with a
//! `rating`, as rating prompts often ask for).

use serde_json::Value;

use super::generate::{AnswerError, answer_json, answer_list};

/// The ratings of a rating answer for a batch of `count` pairs.
pub(crate) fn parse_ratings(text: &str, count: usize) -> Result<Vec<f64>, AnswerError> {
    let items = answer_list(answer_json(text)?, "ratings")?;
    if items.len() != count {
        return Err(AnswerError::RatingCount {
            got: items.len(),
            want: count,
        });
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let value = match item {
                Value::Object(map) => map.get("rating").or_else(|| map.get("score")),
                other => Some(other),
            };
            let rating = match value {
                Some(Value::Number(n)) => n.as_f64(),
                Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
                _ => None,
            }
            .ok_or_else(|| AnswerError::RatingNotNumber(i + 1, item.to_string()))?;
            if (1.0..=10.0).contains(&rating) {
                Ok(rating)
            } else {
                Err(AnswerError::RatingOutOfRange(i + 1, rating))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratings_in_order_in_every_accepted_shape() {
        assert_eq!(
            parse_ratings(r#"{"ratings": [8, 3]}"#, 2),
            Ok(vec![8.0, 3.0])
        );
        assert_eq!(
            parse_ratings(
                r#"[{"question": "q", "answer": "a", "rating": 7}, {"rating": "9.5"}]"#,
                2
            ),
            Ok(vec![7.0, 9.5])
        );
    }

    #[test]
    fn wrong_counts_and_values_are_errors() {
        assert!(parse_ratings(r#"{"ratings": [8]}"#, 2).is_err());
        assert!(parse_ratings(r#"{"ratings": [8, 11]}"#, 2).is_err());
        assert!(parse_ratings(r#"{"ratings": [8, "good"]}"#, 2).is_err());
        assert!(parse_ratings("eight", 1).is_err());
    }
}
