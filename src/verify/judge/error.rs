//! Why a judge sample gives no level: its prompt did not render, its request
//! failed, or its answer was not a level of the rubric.

/// Why one judge sample has no level; the message goes to re-ask logs and records.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JudgeError {
    /// The judge template is missing from the rule's environment.
    #[error("judge template: {0}")]
    NoTemplate(String),
    /// The judge template failed to render for this answer.
    #[error("judge template: {0}")]
    Render(String),
    /// The request to the judge model failed (the provider's message).
    #[error("judge request failed: {0}")]
    Request(String),
    /// The answer holds no JSON object.
    #[error("the judge's answer holds no JSON object")]
    NoJson,
    /// The JSON object does not parse.
    #[error("invalid JSON: {0}")]
    Json(String),
    /// The JSON object has no `level`.
    #[error("the judge's JSON has no `level`")]
    NoLevel,
    /// `level` is not an integer.
    #[error("`level` is not an integer: {0}")]
    LevelNotInteger(String),
    /// `level` is an integer the rubric does not have.
    #[error("level {level} is not in the rubric ({levels})")]
    NotInRubric {
        /// The level given.
        level: i64,
        /// The rubric's levels, comma-separated.
        levels: String,
    },
}
