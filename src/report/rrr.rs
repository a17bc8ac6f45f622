//! The Russian Router Ranking CSV: one file per model, one row per split of
//! each spec that asks for it (`[report] csv = "rrr"`), in the original
//! benchmark's columns. The split is the spec's first `group_by` variable;
//! without one, the whole spec is one row with split `all`.

use crate::metrics::Metrics;

use super::View;
use super::csv::field;
use super::model_tag;

const HEADER: [&str; 12] = [
    "model",
    "model_name",
    "model_size",
    "model_quant",
    "dataset_name",
    "dataset_split",
    "total_tests",
    "valid_responses",
    "correct_responses",
    "accuracy",
    "avg_response_time",
    "avg_token_count",
];

/// `(model, CSV text)` for every model with records in an RRR spec.
pub(crate) fn render(v: &View) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for model in v.models {
        let tag = model_tag::parse_with_id(model, v.ctx.model_ids.get(model).map(String::as_str));
        let mut rows = Vec::new();
        for spec in v.specs {
            let Some(dataset) = &spec.rrr else { continue };
            let split_var = spec.group_by.first();
            let groups = split_var.and_then(|var| v.summary.groups(model, &spec.id)?.get(var));
            let splits: Vec<(&str, &Metrics)> = match groups {
                Some(g) => g.iter().map(|(k, m)| (k.as_str(), m)).collect(),
                None => match v.summary.cell(model, &spec.id) {
                    Some(m) => vec![("all", m)],
                    None => continue,
                },
            };
            for (split, m) in splits {
                rows.push(row(model, &tag, dataset, split, m));
            }
        }
        if rows.is_empty() {
            continue;
        }
        let mut out = HEADER.join(",");
        out.push('\n');
        for r in rows {
            let fields: Vec<String> = r.iter().map(|f| field(f)).collect();
            out.push_str(&fields.join(","));
            out.push('\n');
        }
        files.push((model.clone(), out));
    }
    files
}

/// One split's row. Times are seconds per answered request; tokens are generated tokens per request.
fn row(
    model: &str,
    tag: &model_tag::ModelTag,
    dataset: &str,
    split: &str,
    m: &Metrics,
) -> [String; 12] {
    let seconds = m.latency_ms.map_or(0.0, |l| l.mean / 1000.0);
    [
        model.to_owned(),
        tag.name.clone(),
        tag.size.clone(),
        tag.quant.clone(),
        dataset.to_owned(),
        split.to_owned(),
        m.total.to_string(),
        m.valid.to_string(),
        m.passed.to_string(),
        format!("{:.4}", m.pass_rate),
        format!("{seconds:.3}"),
        format!("{:.1}", m.tokens_out.mean.unwrap_or(0.0)),
    ]
}
