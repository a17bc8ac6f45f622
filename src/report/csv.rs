//! `results/reports/report_<stamp>.csv`: one row per model × spec with
//! records, then one per `group_by` group (the `group` column says
//! `var=value`), RFC 4180 quoting and CRLF line ends. Fractions stay fractions
//! (0..1) so spreadsheets can format them; empty means unknown. Each row has
//! both numbers, `pass_rate` and `mean_score`; `headline` names the one the
//! spec ranks by and `score` repeats it. The cost columns are empty for a
//! model without a price. `judges` names each judge rule's judge and rubric
//! hash. The statistics come last: the 95% interval of `score` and its method
//! (`wilson`, `bootstrap`), and for spec
//! rows the model's tie-group rank in the spec and its paired difference from
//! the spec's best model with interval and p-value. The header row is in
//! the report's language; these are its English names. When a rule measured
//! something (the `cer` rule's CER, WER), one `mean <name>` column per measure
//! follows: its mean over the measured answers, empty where none was. Then
//! the reasoning, multiple-choice and sampled columns (pass@k and pass^k at
//! the largest k, with intervals), where any cell has them.

use super::View;
use crate::text::num;

use crate::metrics::{Method, Metrics, Standing};

fn method(m: Method) -> &'static str {
    match m {
        Method::Wilson => "wilson",
        Method::Bootstrap => "bootstrap",
    }
}

/// A field quoted when it holds a comma, quote, CR or LF; quotes doubled.
pub(crate) fn field(s: &str) -> String {
    if s.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// The CSV report.
pub(crate) fn render(v: &View) -> String {
    let mut header: Vec<String> = v.words().csv_header.iter().map(|h| field(h)).collect();
    let names = super::measures::all_names(v);
    let measure = v.words().csv_measure;
    header.extend(
        names
            .iter()
            .map(|n| field(&super::lang::fill(measure, &[n]))),
    );
    let reasoning = super::reasoning::any(v);
    if reasoning {
        header.extend(v.words().csv_reasoning.iter().map(|h| field(h)));
    }
    let choices = super::choices::any(v);
    if choices {
        header.extend(v.words().csv_choices.iter().map(|h| field(h)));
    }
    let sampled = super::pass_k::any(v);
    if sampled {
        header.extend(super::pass_k::NAMES.iter().map(|h| field(h)));
    }
    let mut out = header.join(",");
    out.push_str("\r\n");
    for m in v.models {
        let mean = num(v.summary.category_mean(m), 4, "");
        for s in v.specs {
            let Some(c) = v.summary.cell(m, &s.id) else {
                continue;
            };
            let currency = v.ctx.currency;
            let standing = v.summary.boards.get(&s.id).and_then(|b| b.standing(m));
            let row = Row {
                names: &names,
                reasoning,
                choices,
                sampled,
                group: "",
                currency,
                standing,
            };
            push_row(&mut out, (m, s, c), &mean, &row);
            let groups = v.summary.groups(m, &s.id).into_iter().flatten();
            for (var, values) in groups {
                for (value, g) in values {
                    let group = format!("{var}={value}");
                    let row = Row {
                        names: &names,
                        reasoning,
                        choices,
                        sampled,
                        group: &group,
                        currency,
                        standing: None,
                    };
                    push_row(&mut out, (m, s, g), &mean, &row);
                }
            }
        }
    }
    out
}

/// An amount with every digit it has, or empty when unknown.
fn money(amount: Option<f64>) -> String {
    amount.map_or(String::new(), |a| a.to_string())
}

/// What a row adds to its cell's metrics: the report's measure columns, the
/// group, the currency and the cell's standing in its spec.
struct Row<'a> {
    names: &'a [String],
    /// Whether the report has the reasoning columns.
    reasoning: bool,
    /// Whether the report has the multiple-choice columns.
    choices: bool,
    /// Whether the report has the pass@k and pass^k columns.
    sampled: bool,
    group: &'a str,
    currency: &'a str,
    standing: Option<&'a Standing>,
}

fn push_row(
    out: &mut String,
    (m, s, c): (&str, &super::SpecInfo, &Metrics),
    mean: &str,
    row: &Row,
) {
    let Row {
        names,
        reasoning,
        choices,
        sampled,
        group,
        currency,
        standing,
    } = *row;
    let lat = c.latency_ms;
    // `label=count` pairs in label order: one cell, still easy to split.
    let failures: Vec<String> = c
        .failures
        .iter()
        .map(|(k, f)| format!("{k}={}", f.count))
        .collect();
    // `rule:judge@rubric=judged/errors`: who judged, under which rubric, with what yield.
    let judges: Vec<String> = c
        .judges
        .iter()
        .map(|j| {
            format!(
                "{}:{}@{}={}/{}",
                j.key.rule, j.key.judge, j.key.rubric, j.judged, j.errors
            )
        })
        .collect();
    let versus = standing.and_then(|s| s.vs_best.as_ref());
    let row = [
        m.to_owned(),
        s.id.clone(),
        s.title.clone(),
        c.total.to_string(),
        c.passed.to_string(),
        c.headline.label().replace(' ', "_"),
        format!("{:.4}", c.score()),
        format!("{:.4}", c.pass_rate),
        format!("{:.4}", c.mean_score),
        c.valid.to_string(),
        c.errors.to_string(),
        c.cached.to_string(),
        num(lat.map(|l| l.mean), 1, ""),
        lat.map_or(String::new(), |l| l.p50.to_string()),
        lat.map_or(String::new(), |l| l.p95.to_string()),
        c.tokens_in.sum.to_string(),
        num(c.tokens_in.mean, 1, ""),
        c.tokens_out.sum.to_string(),
        num(c.tokens_out.mean, 1, ""),
        num(c.tokens_per_sec, 2, ""),
        mean.to_owned(),
        failures.join(";"),
        money(c.cost.and_then(|c| c.amount)),
        c.cost.map_or(String::new(), |c| c.estimated.to_string()),
        money(c.cost.map(|c| c.saved)),
        money(c.cost.and_then(|c| c.judge)),
        money(c.cost.and_then(|c| c.per_correct)),
        c.cost.map_or(String::new(), |_| currency.to_owned()),
        group.to_owned(),
        judges.join(";"),
        num(c.interval.map(|i| i.low), 4, ""),
        num(c.interval.map(|i| i.high), 4, ""),
        c.interval
            .map_or(String::new(), |i| method(i.method).to_owned()),
        standing.map_or(String::new(), |s| s.rank.to_string()),
        num(versus.map(|x| x.difference), 4, ""),
        num(versus.and_then(|x| x.interval).map(|i| i.low), 4, ""),
        num(versus.and_then(|x| x.interval).map(|i| i.high), 4, ""),
        num(versus.map(|x| x.p_value), 4, ""),
    ];
    let mut extra = super::measures::csv_cells(names, c);
    if reasoning {
        extra.extend(super::reasoning::csv_cells(c));
    }
    if choices {
        extra.extend(super::choices::csv_cells(c));
    }
    if sampled {
        extra.extend(super::pass_k::cells(c));
    }
    let fields: Vec<String> = row.iter().chain(&extra).map(|f| field(f)).collect();
    out.push_str(&fields.join(","));
    out.push_str("\r\n");
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn rfc4180_quoting() {
        let cases = [
            ("plain", "plain"),
            ("a,b", "\"a,b\""),
            ("say \"hi\"", "\"say \"\"hi\"\"\""),
            ("two\nlines", "\"two\nlines\""),
            ("Логика", "Логика"),
        ];
        for (raw, quoted) in cases {
            assert_eq!(field(raw), quoted, "{raw:?}");
        }
    }
}
