//! The judge's prompt: a minijinja template that sees the task, the
//! reference (if any), the answer and every rubric level, and the JSON
//! Schema that constrains the judge's answer to `{reasoning, level}`.

use serde_json::{Value, json};

use super::error::JudgeError;
use super::rubric::Rubric;

/// The default judge prompt in Russian (the users' language).
pub(crate) const DEFAULT_RU: &str = r#"Ты — строгий и беспристрастный эксперт. Оцени ответ ассистента по рубрике.

## Задание
{{ task }}
{% if reference %}
## Эталонный ответ
{{ reference }}
{% endif %}
## Ответ ассистента
{{ answer }}

## Рубрика
{% for l in levels %}- Уровень {{ l.level }} — «{{ l.name }}»: {{ l.criteria }}
{% endfor %}
Сравни ответ с каждым уровнем рубрики и выбери один, наиболее подходящий.
Ответь только JSON-объектом без пояснений вокруг:
{"reasoning": "<краткое обоснование>", "level": <целое число от {{ min_level }} до {{ max_level }}>}"#;

/// The default judge prompt in English.
pub(crate) const DEFAULT_EN: &str = r#"You are a strict and impartial expert. Grade the assistant's answer against the rubric.

## Task
{{ task }}
{% if reference %}
## Reference answer
{{ reference }}
{% endif %}
## Assistant's answer
{{ answer }}

## Rubric
{% for l in levels %}- Level {{ l.level }} — "{{ l.name }}": {{ l.criteria }}
{% endfor %}
Compare the answer with every level of the rubric and choose the one that fits best.
Reply with a JSON object only, nothing around it:
{"reasoning": "<a short justification>", "level": <an integer from {{ min_level }} to {{ max_level }}>}"#;

/// The language of the built-in judge prompt.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PromptLanguage {
    /// Russian (the users' language).
    #[default]
    Ru,
    /// English.
    En,
}

/// The default template for a prompt language.
pub(crate) fn default_template(language: PromptLanguage) -> &'static str {
    match language {
        PromptLanguage::Ru => DEFAULT_RU,
        PromptLanguage::En => DEFAULT_EN,
    }
}

/// What a judge template is rendered with.
pub(crate) struct PromptInput<'a> {
    /// The task as the model saw it (the last user message).
    pub task: &'a str,
    /// The reference answer, when the rule has one.
    pub reference: Option<&'a str>,
    /// The answer being judged.
    pub answer: &'a str,
    /// The instance variables.
    pub vars: &'a serde_json::Map<String, Value>,
}

/// Renders `template` for one answer.
pub(crate) fn render(
    env: &minijinja::Environment<'static>,
    rubric: &Rubric,
    input: &PromptInput,
) -> Result<String, JudgeError> {
    let template = env
        .get_template("judge")
        .map_err(|e| JudgeError::NoTemplate(e.to_string()))?;
    template
        .render(minijinja::context! {
            task => input.task,
            reference => input.reference,
            answer => input.answer,
            levels => minijinja::Value::from(minijinja::value::Serde(rubric.levels())),
            min_level => rubric.min(),
            max_level => rubric.max(),
            vars => minijinja::Value::from(minijinja::value::Serde(input.vars)),
        })
        .map_err(|e| JudgeError::Render(format!("{e:#}")))
}

/// Compiles a judge template (syntax errors surface when the spec loads).
pub(crate) fn environment(
    template: String,
) -> Result<minijinja::Environment<'static>, minijinja::Error> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.add_template_owned("judge", template)?;
    Ok(env)
}

/// The longest reasoning the schema allows, in characters.
pub(crate) const REASONING_CHARS: usize = 400;

/// The JSON Schema of a judge answer: a reasoning string and one of the rubric's levels.
pub(crate) fn answer_schema(rubric: &Rubric) -> Value {
    json!({
        "type": "object",
        "properties": {
            // Bounded, so a rambling judge still closes its JSON within max_tokens.
            "reasoning": {"type": "string", "maxLength": REASONING_CHARS},
            "level": {"type": "integer", "enum": rubric.numbers()},
        },
        "required": ["reasoning", "level"],
        "additionalProperties": false,
    })
}

/// The task a judge sees: the last user message of the conversation the model answered.
pub(crate) fn task_of(messages: &[crate::prompt::Message]) -> &str {
    messages
        .iter()
        .rev()
        .find(|m| m.role == crate::format::Role::User)
        .map_or("", |m| m.content.as_str())
}

#[cfg(test)]
mod tests {
    use super::super::rubric::Level;
    use super::*;

    #[test]
    fn the_default_prompts_show_task_reference_answer_and_every_level() {
        let rubric = Rubric::new(vec![
            Level {
                level: 1,
                name: "Плохо".into(),
                criteria: "неверно".into(),
            },
            Level {
                level: 2,
                name: "Хорошо".into(),
                criteria: "верно".into(),
            },
        ])
        .unwrap();
        let vars = serde_json::Map::new();
        for lang in [PromptLanguage::Ru, PromptLanguage::En] {
            let env = environment(default_template(lang).into()).unwrap();
            let input = PromptInput {
                task: "Когда построили башню?",
                reference: Some("В 1889 году."),
                answer: "В 1889.",
                vars: &vars,
            };
            let text = render(&env, &rubric, &input).unwrap();
            for needle in [
                "Когда построили башню?",
                "В 1889 году.",
                "В 1889.",
                "Плохо",
                "неверно",
                "Хорошо",
                "\"level\"",
            ] {
                assert!(
                    text.contains(needle),
                    "{lang:?}: {needle} missing in {text}"
                );
            }
            assert!(text.contains("1") && text.contains("2"));
            let no_reference = PromptInput {
                reference: None,
                ..input
            };
            let text = render(&env, &rubric, &no_reference).unwrap();
            assert!(!text.contains("В 1889 году."), "{text}");
        }
    }

    #[test]
    fn the_schema_allows_only_rubric_levels() {
        let rubric = Rubric::new(
            (0..=3)
                .map(|level| Level {
                    level,
                    name: format!("{level}"),
                    criteria: String::new(),
                })
                .collect(),
        )
        .unwrap();
        let schema = answer_schema(&rubric);
        let v = jsonschema::validator_for(&schema).unwrap();
        assert!(v.is_valid(&json!({"reasoning": "r", "level": 3})));
        assert!(!v.is_valid(&json!({"reasoning": "r", "level": 4})));
        assert!(!v.is_valid(&json!({"level": 2})));
    }
}
