//! The synth pipeline as data: a TOML file with the chunking settings, the
//! summary, generation and rating prompts (minijinja templates), their
//! sampling and JSON schemas, and the filters. The default ships as
//! `pipelines/synth_qa.toml`, embedded in the binary; `--pipeline FILE`
//! replaces it without recompiling.

use std::path::Path;

use minijinja::{Environment, UndefinedBehavior, Value};
use sha2::{Digest, Sha256};

use super::chunk::ChunkConfig;
use super::in_range;
use super::pipeline_file::{DedupDef, PipelineDef, StageDef};
use crate::error::{Diagnostic, ErrorKind};
use crate::format::locate::{Key, SourceMap};
use crate::format::{Role, key_path, toml_diagnostic};
use crate::prompt::{Message, PromptSet};
use crate::provider::{ChatRequest, ModelSetup, OutputKind};

/// The shipped default pipeline's text.
pub(crate) const DEFAULT_PIPELINE: &str = include_str!("../../pipelines/synth_qa.toml");

/// A pipeline file that cannot be used: what is wrong and where, at the
/// value when it is one (`<default pipeline>` names the embedded one).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct PipelineError(Box<Diagnostic>);

impl PipelineError {
    /// What is wrong, where.
    pub(crate) fn diagnostic(&self) -> &Diagnostic {
        &self.0
    }
}

impl From<Diagnostic> for PipelineError {
    fn from(d: Diagnostic) -> PipelineError {
        PipelineError(Box::new(d))
    }
}

/// What the command line changes in a pipeline.
#[derive(Debug, Clone, Default)]
pub(crate) struct Overrides {
    /// The generation step's pairs per chunk.
    pub num_pairs: Option<u32>,
    /// The rating step's lowest rating kept.
    pub threshold: Option<f64>,
    /// Summarize documents first, whatever the pipeline says.
    pub summary: bool,
}

/// One step ready to render requests.
pub(crate) struct Stage {
    /// Its definition.
    pub def: StageDef,
    prompts: PromptSet,
}

/// A loaded, checked pipeline.
pub(crate) struct Pipeline {
    /// Chunking settings.
    pub chunking: ChunkConfig,
    /// The optional summary step.
    pub summary: Stage,
    /// QA generation.
    pub generation: Stage,
    /// Rating.
    pub rating: Stage,
    /// De-duplication.
    pub dedup: DedupDef,
    /// SHA-256 of the pipeline text (recorded in metadata).
    pub sha256: String,
}

impl Pipeline {
    /// Applies the command line's `overrides`.
    pub(crate) fn apply(&mut self, overrides: &Overrides) {
        if overrides.num_pairs.is_some() {
            self.generation.def.num_pairs = overrides.num_pairs;
        }
        if overrides.threshold.is_some() {
            self.rating.def.threshold = overrides.threshold;
        }
        if overrides.summary {
            self.summary.def.enabled = Some(true);
        }
    }

    /// Loads `path`, or the embedded default when `None`.
    pub(crate) fn load(path: Option<&Path>) -> Result<Pipeline, PipelineError> {
        match path {
            None => Pipeline::parse(DEFAULT_PIPELINE, Path::new("<default pipeline>")),
            Some(p) => {
                let text = crate::files::read_text(p, crate::files::FileKind::Config)
                    .map_err(|e| Diagnostic::io(p, format!("cannot read the pipeline: {e}")))?;
                Pipeline::parse(&text, p)
            }
        }
    }

    /// Parses and checks a pipeline's text; `path` names it in errors.
    pub(crate) fn parse(text: &str, path: &Path) -> Result<Pipeline, PipelineError> {
        let map = SourceMap::parse(path, text).map_err(|e| toml_diagnostic(path, text, "", &e))?;
        let at = |keys: &[Key], message: String| {
            Diagnostic::new(ErrorKind::Invalid, map.locate(keys), message).with_source(text)
        };
        // Like a syntax error: serde would read `nan` as a number.
        if let Some((location, value)) = map.non_finite_floats().into_iter().next() {
            let message = format!("{value} is not a finite number: no key of a pipeline takes one");
            return Err(Diagnostic::new(ErrorKind::Invalid, location, message)
                .with_source(text)
                .into());
        }
        let def: PipelineDef =
            toml::from_str(text).map_err(|e| toml_diagnostic(path, text, "", &e))?;
        let checks = [
            ("summary", &def.summary, ["enabled"].as_slice()),
            ("generation", &def.generation, &["num_pairs"]),
            ("rating", &def.rating, &["batch_size", "threshold"]),
        ];
        for (name, stage, allowed) in checks {
            let extra = [
                ("enabled", stage.enabled.is_some()),
                ("num_pairs", stage.num_pairs.is_some()),
                ("batch_size", stage.batch_size.is_some()),
                ("threshold", stage.threshold.is_some()),
            ];
            if let Some((key, _)) = extra.iter().find(|(k, set)| *set && !allowed.contains(k)) {
                let message = format!("[{name}] takes no `{key}`");
                return Err(Diagnostic::new(
                    ErrorKind::UnknownKey,
                    map.locate_key(key_path![name, *key]),
                    message,
                )
                .with_source(text)
                .into());
            }
        }
        if let Some((keys, problem)) = in_range::problems(&def).into_iter().next() {
            return Err(at(&keys, problem).into());
        }
        if let Err(e) = def.chunking.max_tokens() {
            return Err(at(key_path!["chunking", "max_seq_length"], e.to_string()).into());
        }
        if let Err(e) = def.chunking.tokenizer() {
            return Err(at(key_path!["chunking", "tokenizer"], e.to_string()).into());
        }
        let stage = |name: &'static str, def: StageDef| -> Result<Stage, PipelineError> {
            let prompts = PromptSet::new(vec![
                (Role::System, format!("{name}.system"), def.system.clone()),
                (Role::User, format!("{name}.user"), def.user.clone()),
            ])
            .map_err(|errors| {
                let role = match errors.first() {
                    Some(e) if e.template.ends_with(".system") => "system",
                    _ => "user",
                };
                let message = errors
                    .iter()
                    .map(|e| format!("{}:{}:{}: {}", e.template, e.line, e.column, e.message))
                    .collect::<Vec<_>>()
                    .join("; ");
                at(key_path![name, role], message)
            })?;
            Ok(Stage { def, prompts })
        };
        Ok(Pipeline {
            chunking: def.chunking,
            summary: stage("summary", def.summary)?,
            generation: stage("generation", def.generation)?,
            rating: stage("rating", def.rating)?,
            dedup: def.dedup,
            sha256: Sha256::digest(text.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        })
    }

    /// Pairs asked per chunk (default 25).
    pub(crate) fn num_pairs(&self) -> u32 {
        self.generation.def.num_pairs.unwrap_or(25)
    }

    /// Pairs per rating request (default 4).
    pub(crate) fn batch_size(&self) -> usize {
        self.rating.def.batch_size.unwrap_or(4)
    }

    /// The lowest rating kept (default 1.0: the `cleanup_threshold` of common synthetic-QA kits).
    pub(crate) fn threshold(&self) -> f64 {
        self.rating.def.threshold.unwrap_or(1.0)
    }

    /// Whether documents are summarized first.
    pub(crate) fn summarize(&self) -> bool {
        self.summary.def.enabled.unwrap_or(false)
    }
}

impl Stage {
    /// Asks allowed per request when the answer is not the JSON asked for.
    pub(crate) fn attempts(&self) -> u32 {
        self.def.attempts.unwrap_or(3)
    }

    /// Renders this step's request for `context`. The model's `seed`, `num_ctx`
    /// and `extra_body` apply; the sampling is the pipeline's, which is what it is about.
    pub(crate) fn request(
        &self,
        context: &Value,
        model: &ModelSetup,
    ) -> Result<ChatRequest, StepError> {
        let messages: Vec<Message> = self
            .prompts
            .render(context)
            .map_err(StepError::Prompt)?
            .into_iter()
            .filter(|m| !(m.role == Role::System && m.content.trim().is_empty()))
            .collect();
        let format = match &self.def.schema {
            None => OutputKind::Text,
            Some(template) => OutputKind::JsonSchema(render_schema(template, context)?),
        };
        let o = &model.options;
        Ok(ChatRequest {
            temperature: self.def.temperature,
            top_p: self.def.top_p,
            seed: o.seed,
            format,
            num_ctx: o.num_ctx,
            extra: o.extra_body.clone().unwrap_or_default(),
            reasoning: model.reasoning,
            ..ChatRequest::new(messages, self.def.max_tokens)
        })
    }
}

/// Why a step's request could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StepError {
    /// A prompt template failed to render (position inside the template).
    #[error("{}:{}:{}: {}", .0.template, .0.line, .0.column, .0.message)]
    Prompt(crate::prompt::TemplateError),
    /// The `schema` template failed to render.
    #[error("schema: {0}")]
    Schema(#[from] minijinja::Error),
    /// The rendered `schema` is not JSON.
    #[error("schema is not JSON: {source}\n{text}")]
    SchemaJson {
        /// The parser's complaint.
        source: serde_json::Error,
        /// The rendered schema.
        text: String,
    },
}

fn render_schema(template: &str, context: &Value) -> Result<serde_json::Value, StepError> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    let text = env.render_str(template, context)?;
    serde_json::from_str(&text).map_err(|source| StepError::SchemaJson { source, text })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderKind;

    #[test]
    fn overrides_change_only_what_they_name() {
        let mut p = Pipeline::load(None).unwrap();
        p.apply(&Overrides::default());
        assert_eq!(
            (p.num_pairs(), p.threshold(), p.summarize()),
            (25, 1.0, false)
        );
        let overrides = Overrides {
            num_pairs: Some(5),
            threshold: Some(7.5),
            summary: true,
        };
        p.apply(&overrides);
        assert_eq!(
            (p.num_pairs(), p.threshold(), p.summarize()),
            (5, 7.5, true)
        );
        assert_eq!(p.batch_size(), 4, "what no override names stays");
    }

    #[test]
    fn the_default_pipeline_has_the_seed_defaults() {
        let p = Pipeline::load(None).unwrap();
        assert_eq!(p.chunking.max_tokens(), Ok(896));
        assert_eq!(p.chunking.overlap, 64);
        assert_eq!(p.num_pairs(), 25);
        assert_eq!(p.generation.def.temperature, 0.7);
        assert_eq!(p.generation.def.top_p, Some(0.95));
        assert_eq!(p.generation.def.max_tokens, 512);
        assert_eq!(p.batch_size(), 4);
        assert_eq!(p.rating.def.temperature, 0.3);
        assert_eq!(p.threshold(), 1.0);
        assert!(!p.summarize());
        let model = ModelSetup::new(ProviderKind::OpenAi, "m");
        let ctx = minijinja::context! { text => "Текст.", num_pairs => 3, summary => "", document => "d", chunk => 0 };
        let r = p.generation.request(&ctx, &model).unwrap();
        assert!(r.messages[1].content.contains("Составь 3 пар"));
        let OutputKind::JsonSchema(schema) = r.format else {
            panic!("a schema")
        };
        assert_eq!(schema["properties"]["pairs"]["maxItems"], 3);
        let pairs = vec![serde_json::json!({"question": "q", "answer": "a"}); 2];
        let ctx = minijinja::context! { pairs => minijinja::Value::from(minijinja::value::Serde(&pairs)), document => "d" };
        let r = p.rating.request(&ctx, &model).unwrap();
        let OutputKind::JsonSchema(schema) = r.format else {
            panic!("a schema")
        };
        assert_eq!(schema["properties"]["ratings"]["minItems"], 2);
    }

    #[test]
    fn bad_pipelines_name_the_file_and_the_problem() {
        let bad = DEFAULT_PIPELINE.replace("batch_size = 4", "batch_sise = 4");
        let e = Pipeline::parse(&bad, Path::new("p.toml")).err().unwrap();
        assert!(e.to_string().starts_with("p.toml:83:1: "), "{e}");
        assert!(e.to_string().contains("batch_sise"), "{e}");
        let bad = DEFAULT_PIPELINE.replace("num_pairs = 25", "num_pairs = 25\nthreshold = 3");
        let e = Pipeline::parse(&bad, Path::new("p.toml")).err().unwrap();
        assert!(
            e.to_string().contains("[generation] takes no `threshold`"),
            "{e}"
        );
        let bad = DEFAULT_PIPELINE.replace("{{ num_pairs }} пар", "{{ num_pairs }");
        let e = Pipeline::parse(&bad, Path::new("p.toml")).err().unwrap();
        assert!(e.to_string().contains("generation.user"), "{e}");
        let bad = DEFAULT_PIPELINE.replace("max_seq_length = 2048", "max_seq_length = 1000");
        assert!(Pipeline::parse(&bad, Path::new("p.toml")).is_err());
    }
}
