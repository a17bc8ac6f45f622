//! `first_token` labels seen through each named model's own tokenizer: a
//! label is read from the first answer token's alternatives, so it must be
//! one token of that vocabulary (bare or after a space), and no two labels
//! may be the same token. Only the server can say; `check -m` asks it and
//! warns, since the same spec may suit another model.

use crate::error::{Diagnostic, ErrorKind};
use crate::format::{ChoiceMethod, key_path};
use crate::provider::ModelSetup;
use crate::provider::tokenize::{TokenizeError, Tokenizer};
use crate::spec::Spec;

/// How one label tokenizes: each form a first token may take, with its ids.
struct LabelView {
    label: String,
    forms: Vec<(String, Vec<i64>)>,
}

impl LabelView {
    /// The label's one-token forms' ids.
    fn single(&self) -> impl Iterator<Item = i64> + '_ {
        self.forms
            .iter()
            .filter(|(_, ids)| ids.len() == 1)
            .map(|(_, ids)| ids[0])
    }
}

/// Warnings for the first `used` of `spec`'s `first_token` labels (those its
/// instances need) under each of `models`' tokenizers; a model whose
/// tokenizer cannot be asked is a warning too.
pub(super) fn label_warnings(spec: &Spec, used: usize, models: &[ModelSetup]) -> Vec<Diagnostic> {
    let Some(choices) = spec.choices() else {
        return Vec::new();
    };
    if choices.method != ChoiceMethod::FirstToken || models.is_empty() {
        return Vec::new();
    }
    let at = spec.source_map().locate(key_path!["choices", "labels"]);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let message = format!("cannot ask the models' tokenizers: {e}");
            return vec![Diagnostic::new(ErrorKind::Io, at, message)];
        }
    };
    let mut warnings = Vec::new();
    for model in models {
        let labels = &choices.labels()[..used.min(choices.labels().len())];
        let message = match runtime.block_on(views(model, labels)) {
            Ok(views) => problems(&views),
            Err(e) => Some(format!("labels not checked: {e}")),
        };
        if let Some(message) = message {
            let message = format!("model `{}`: {message}", model.name);
            let warning = Diagnostic::new(ErrorKind::Invalid, at.clone(), message);
            warnings.push(warning.with_source(spec.source_map().source()));
        }
    }
    warnings
}

/// Each label's forms as `model`'s tokenizer splits them.
async fn views(model: &ModelSetup, labels: &[String]) -> Result<Vec<LabelView>, TokenizeError> {
    let tokenizer = Tokenizer::connect(model).await?;
    let mut views = Vec::with_capacity(labels.len());
    for label in labels {
        let label = label.trim().to_owned();
        let mut forms = Vec::new();
        for form in [label.clone(), format!(" {label}")] {
            let ids = tokenizer.tokens(&form).await?;
            forms.push((form, ids));
        }
        views.push(LabelView { label, forms });
    }
    Ok(views)
}

/// Labels shown by name in a warning; the rest are counted.
const SHOWN: usize = 3;

/// What is wrong with the labels under one tokenizer, if anything.
fn problems(views: &[LabelView]) -> Option<String> {
    let mut found = Vec::new();
    let split: Vec<&LabelView> = (views.iter())
        .filter(|view| view.single().next().is_none())
        .collect();
    if !split.is_empty() {
        let mut shown: Vec<String> = (split.iter().take(SHOWN))
            .map(|view| {
                let forms: Vec<String> = (view.forms.iter())
                    .map(|(form, ids)| format!("`{form}` {ids:?}"))
                    .collect();
                format!("`{}` ({})", view.label, forms.join(", "))
            })
            .collect();
        if split.len() > SHOWN {
            shown.push(format!("and {} more", split.len() - SHOWN));
        }
        let (count, verb) = match split.len() {
            1 => ("label".to_owned(), "is"),
            n => (format!("{n} of {} labels", views.len()), "are"),
        };
        found.push(format!(
            "{count} {verb} not one token, so first_token never sees {}: {}",
            if split.len() == 1 { "it" } else { "them" },
            shown.join(", ")
        ));
    }
    for (i, a) in views.iter().enumerate() {
        for b in &views[i + 1..] {
            if let Some(id) = a.single().find(|id| b.single().any(|other| other == *id)) {
                found.push(format!(
                    "labels `{}` and `{}` are the same token ({id})",
                    a.label, b.label
                ));
            }
        }
    }
    (!found.is_empty()).then(|| found.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(label: &str, bare: &[i64], spaced: &[i64]) -> LabelView {
        LabelView {
            label: label.into(),
            forms: vec![
                (label.into(), bare.to_vec()),
                (format!(" {label}"), spaced.to_vec()),
            ],
        }
    }

    #[test]
    fn a_label_needs_one_single_token_form_and_a_token_of_its_own() {
        assert_eq!(
            problems(&[view("A", &[32], &[330]), view("B", &[33], &[29, 33])]),
            None
        );
        let split = problems(&[
            view("A", &[32], &[330]),
            view("Б", &[208, 244], &[29, 208, 244]),
        ]);
        assert_eq!(
            split.as_deref(),
            Some(
                "label is not one token, so first_token never sees it: `Б` (`Б` [208, 244], \
                 ` Б` [29, 208, 244])"
            )
        );
        let cyrillic: Vec<LabelView> = ["А", "Б", "В", "Г", "Д"]
            .iter()
            .enumerate()
            .map(|(i, l)| view(l, &[208, i as i64], &[29, i as i64]))
            .collect();
        let many = problems(&cyrillic).unwrap();
        assert!(
            many.starts_with(
                "5 of 5 labels are not one token, so first_token never sees them: `А`"
            ),
            "{many}"
        );
        assert!(
            many.ends_with("`В` (`В` [208, 2], ` В` [29, 2]), and 2 more"),
            "{many}"
        );
        let same = problems(&[view("A", &[32], &[330]), view("a", &[7], &[330])]);
        assert_eq!(
            same.as_deref(),
            Some("labels `A` and `a` are the same token (330)")
        );
    }
}
