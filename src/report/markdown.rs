//! `results/reports/report_<stamp>.md`: in Russian, the report users of the
//! «Базовый Контроль» checks expect (its headings fixed); in English, the same
//! layout. Then per-model tables, the analysis and failing instances. Every
//! phrase comes from the report language's table ([`super::lang`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::metrics::{Example, Metrics};

use super::View;
use super::calls::answer_text;
use super::lang::fill;
use super::terminal::with_interval;
use crate::text::{code_block, header_row, inline_code, md_cell, num, one_line, percent, table};

/// Shown for cells without records.
const NONE: &str = "—";
/// Characters of a response or detail quoted inline in the analysis.
const INLINE_CHARS: usize = 80;

/// The whole Markdown report.
pub(crate) fn render(v: &View) -> String {
    let mut s = String::new();
    let models: Vec<String> = v.models.iter().map(|m| inline_code(m)).collect();
    let runs: Vec<String> = v.ctx.run_ids.iter().map(|r| inline_code(r)).collect();
    let w = &v.words().md;
    s.push_str(w.title);
    // Separate paragraphs, so renderers keep one fact per line.
    let _ = writeln!(s, "{} {}\n", w.date, v.ctx.timestamp);
    let _ = writeln!(s, "{} {}\n", w.models, models.join(", "));
    let _ = writeln!(s, "{} {}\n", w.runs, runs.join(", "));
    if let Some(line) = super::sandbox_line(v.ctx) {
        let _ = writeln!(s, "{} {line}\n", w.sandbox);
    }
    s.push_str(w.summary);
    s.push_str(&summary_table(v));
    s.push_str(&summary_note(v));
    s.push_str(&super::statistics::leaderboard(v));
    s.push_str(&super::statistics::categories(v));
    s.push_str(&super::statistics::runs(v));
    groups(&mut s, v);
    s.push_str(&super::measures::markdown(v));
    s.push_str(&super::markdown_sections(v));
    comparisons(&mut s, v);
    s.push_str(&super::statistics::flaky(v));
    s.push_str(&super::judge_stats::markdown(v));
    s.push_str(&super::costs::markdown(v));
    s.push_str(&super::sweep::markdown(v));
    s.push_str(&super::endpoints::markdown(v));
    s.push_str(w.per_model);
    for m in v.models {
        details(&mut s, v, m);
    }
    s.push_str(w.analysis);
    for m in v.models {
        analysis(&mut s, v, m);
    }
    s.push_str(w.failing);
    let before = s.len();
    for m in v.models {
        failing(&mut s, v, m);
    }
    if s.len() == before {
        s.push_str(w.all_passed);
    }
    s
}

fn summary_table(v: &View) -> String {
    let w = &v.words().md;
    let mut header = vec![w.model_category.to_owned()];
    header.extend(v.specs.iter().map(|s| md_cell(&s.title)));
    header.push(w.total.to_owned());
    let rows: Vec<Vec<String>> = v
        .models
        .iter()
        .map(|m| {
            let mut row = vec![bold(m)];
            row.extend(v.specs.iter().map(|s| {
                v.summary.cell(m, &s.id).map_or(NONE.into(), |c| {
                    with_interval(c.score(), c.interval.map(|e| e.interval()))
                })
            }));
            row.push(
                v.summary
                    .category_mean(m)
                    .map_or(NONE.into(), |a| format!("**{}**", percent(a))),
            );
            row
        })
        .collect();
    label_table(&header, &rows)
}

/// What the summary table's numbers are: each category's headline and the total.
fn summary_note(v: &View) -> String {
    let scored: Vec<String> = v
        .specs
        .iter()
        .filter(|s| s.headline == crate::metrics::Headline::MeanScore)
        .map(|s| md_cell(&s.title))
        .collect();
    let w = &v.words().md;
    let mut note = w.note_cell.to_owned();
    if !scored.is_empty() {
        note += &fill(w.note_scored, &[&scored.join(", ")]);
    }
    note.push_str(w.note_rest);
    note
}

/// `group_by` breakdowns: per spec and variable, models × values.
fn groups(s: &mut String, v: &View) {
    let words = v.words();
    let w = &words.md;
    let mut heading = false;
    for spec in v.specs {
        for var in &spec.group_by {
            let values: std::collections::BTreeSet<&String> = v
                .models
                .iter()
                .filter_map(|m| v.summary.groups(m, &spec.id)?.get(var))
                .flat_map(|g| g.keys())
                .collect();
            if values.is_empty() {
                continue;
            }
            if !heading {
                s.push_str(w.groups);
                heading = true;
            }
            let header = header_row(
                &super::capitalized(words.model),
                values.iter().map(|k| md_cell(k)),
            );
            let rows: Vec<Vec<String>> = v
                .models
                .iter()
                .filter_map(|m| {
                    let g = v.summary.groups(m, &spec.id)?.get(var)?;
                    let mut row = vec![bold(m)];
                    row.extend(values.iter().map(|k| {
                        g.get(*k).map_or(NONE.into(), |c| {
                            let acc = with_interval(c.score(), c.interval.map(|e| e.interval()));
                            format!("{acc} ({}/{})", c.passed, c.total)
                        })
                    }));
                    Some(row)
                })
                .collect();
            let (title, by) = (md_cell(&spec.title), inline_code(var));
            let _ = writeln!(s, "{}", fill(w.by, &[&title, &by]));
            s.push_str(&label_table(&header, &rows));
        }
    }
}

/// One table row of metrics.
/// Sampled specs: mean accuracy, pass@k, maj@n, tier and change against the baseline
/// per model, then per group; the best model named under each table.
fn comparisons(s: &mut String, v: &View) {
    let all = super::comparison::build(v);
    if all.is_empty() {
        return;
    }
    let words = v.words();
    let w = &words.md;
    let (model, pass_rate) = (
        super::capitalized(words.model),
        super::capitalized(words.pass_rate),
    );
    s.push_str(w.sampled);
    for c in &all {
        let _ = writeln!(s, "\n### {}\n", md_cell(&c.title));
        let has_maj = c.models.iter().any(|l| l.rates.maj.is_some());
        let mut header = vec![model.clone(), pass_rate.clone()];
        header.extend(c.ks.iter().map(|k| format!("pass@{k}")));
        let hats = super::comparison::hat_ks(c);
        header.extend(hats.iter().map(|k| format!("pass^{k}")));
        if has_maj {
            header.push("maj@n".to_owned());
        }
        header.push(w.tier.to_owned());
        if c.baseline.is_some() {
            header.push(w.vs_baseline.to_owned());
        }
        let rows: Vec<Vec<String>> = c
            .models
            .iter()
            .map(|l| {
                let mut row = vec![bold(&l.model), percent(l.rates.pass_rate)];
                let shown = |values: &BTreeMap<u32, f64>, intervals: &BTreeMap<u32, _>, k| {
                    (values.get(k)).map_or(NONE.into(), |p| {
                        with_interval(*p, intervals.get(k).copied())
                    })
                };
                let r = &l.rates;
                row.extend(
                    c.ks.iter()
                        .map(|k| shown(&r.pass_at_k, &r.pass_at_k_interval, k)),
                );
                row.extend(
                    hats.iter()
                        .map(|k| shown(&r.pass_hat_k, &r.pass_hat_k_interval, k)),
                );
                if has_maj {
                    row.push(l.rates.maj.map_or(NONE.into(), percent));
                }
                row.push(l.tier.to_owned());
                if c.baseline.is_some() {
                    row.push(super::comparison::baseline_change(l));
                }
                row
            })
            .collect();
        s.push_str(&label_table(&header, &rows));
        if c.models.len() > 1 {
            let best = c
                .best
                .as_deref()
                .map_or(w.best_none.to_owned(), inline_code);
            s.push_str(&fill(w.best, &[&best]));
            if let Some(base) = &c.baseline {
                s.push_str(&fill(w.baseline, &[&inline_code(base)]));
            }
            s.push('\n');
        }
        for (rule, lines) in super::comparison::alongside(c) {
            let _ = writeln!(s, "{}", fill(w.rule_report_only, &[&inline_code(rule)]));
            let mut header = vec![model.clone(), pass_rate.clone()];
            header.extend(c.ks.iter().map(|k| format!("pass@{k}")));
            let rows: Vec<Vec<String>> = lines
                .iter()
                .map(|(model, g)| {
                    let mut row = vec![bold(model), percent(g.pass_rate)];
                    row.extend(
                        c.ks.iter()
                            .map(|k| g.pass_at_k.get(k).map_or(NONE.into(), |p| percent(*p))),
                    );
                    row
                })
                .collect();
            s.push_str(&label_table(&header, &rows));
        }
        let top = c.ks.last().copied();
        for (var, values) in c.group_columns() {
            let label = super::comparison::group_label("", top);
            let by = inline_code(var);
            let _ = writeln!(s, "{}", fill(w.by_pass, &[&by, &label]));
            let header = header_row(&model, values.iter().map(|v| md_cell(v)));
            let rows: Vec<Vec<String>> = c
                .models
                .iter()
                .map(|l| {
                    let mut row = vec![bold(&l.model)];
                    row.extend(values.iter().map(|value| {
                        l.groups
                            .get(var)
                            .and_then(|g| g.get(*value))
                            .map_or(NONE.into(), |g| super::comparison::group_cell(g, top))
                    }));
                    row
                })
                .collect();
            s.push_str(&label_table(&header, &rows));
        }
    }
}

/// A table whose first column (labels) is left-aligned and the rest centered.
fn label_table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut center = vec![true; header.len()];
    center[0] = false;
    table(header, &center, rows)
}

/// A model name in bold, escaped for a table cell.
fn bold(name: &str) -> String {
    format!("**{}**", md_cell(name))
}

fn metric_row(label: String, c: &Metrics) -> Vec<String> {
    let lat = c.latency_ms;
    vec![
        label,
        with_interval(c.score(), c.interval.map(|e| e.interval())),
        percent(c.pass_rate),
        percent(c.mean_score),
        format!("{}/{}", c.passed, c.total),
        format!("{}/{}", c.valid, c.total),
        c.errors.to_string(),
        c.cached.to_string(),
        num(lat.map(|l| l.mean), 0, NONE),
        num(lat.map(|l| l.p50 as f64), 0, NONE),
        num(lat.map(|l| l.p95 as f64), 0, NONE),
        num(c.tokens_in.mean, 1, NONE),
        num(c.tokens_out.mean, 1, NONE),
        num(c.tokens_per_sec, 1, NONE),
    ]
}

fn details(s: &mut String, v: &View, model: &str) {
    let w = &v.words().md;
    let _ = writeln!(s, "\n### {}\n", inline_code(model));
    let Some(total) = v.summary.model(model) else {
        s.push_str(w.no_records);
        return;
    };
    let header: Vec<String> = w.details.map(str::to_owned).to_vec();
    let mut rows: Vec<Vec<String>> = v
        .specs
        .iter()
        .filter_map(|spec| {
            Some(metric_row(
                md_cell(&spec.title),
                v.summary.cell(model, &spec.id)?,
            ))
        })
        .collect();
    rows.push(metric_row(w.total_row.into(), total));
    s.push_str(&label_table(&header, &rows));
}

/// How an example went wrong, on one line: the response and detail, or the request error.
fn example_line(w: &super::lang::Markdown, e: &Example) -> String {
    let mut line = inline_code(&e.id);
    if let Some(err) = &e.error {
        line += &fill(
            w.example_error,
            &[&inline_code(&one_line(err, INLINE_CHARS))],
        );
        return line;
    }
    let response = answer_text(e.response.as_deref(), &e.trajectory).unwrap_or_default();
    line += &fill(
        w.example_response,
        &[&inline_code(&one_line(&response, INLINE_CHARS))],
    );
    if !e.detail.is_empty() {
        let _ = write!(
            line,
            " — {}",
            inline_code(&one_line(&e.detail, INLINE_CHARS))
        );
    }
    line
}

fn analysis(s: &mut String, v: &View, model: &str) {
    let (Some(cells), Some(total)) = (v.summary.cells.get(model), v.summary.model(model)) else {
        return;
    };
    let w = &v.words().md;
    let name = inline_code(model);
    // Report order, so ties list categories as the tables do.
    let scored: Vec<(&str, f64)> = v
        .specs
        .iter()
        .filter_map(|sp| Some((sp.title.as_str(), cells.get(&sp.id)?.score())))
        .collect();
    let best = scored.iter().map(|x| x.1).fold(f64::MIN, f64::max);
    let worst = scored.iter().map(|x| x.1).fold(f64::MAX, f64::min);
    let list = |target: f64| {
        let picked: Vec<String> = scored
            .iter()
            .filter(|x| x.1 == target)
            .map(|(t, a)| format!("{} ({})", md_cell(t), percent(*a)))
            .collect();
        picked.join(", ")
    };
    let _ = writeln!(s, "{}", fill(w.strengths, &[&name, &list(best)]));
    let weak = if worst < best {
        list(worst)
    } else {
        w.weaknesses_none.to_owned()
    };
    let _ = writeln!(s, "{}", fill(w.weaknesses, &[&name, &weak]));
    let typical = fill(w.typical, &[&name]);
    if total.failures.is_empty() {
        let _ = writeln!(s, "{typical} {}", w.none);
        return;
    }
    let _ = writeln!(s, "{typical}");
    let mut kinds: Vec<_> = total.failures.iter().collect();
    kinds.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
    for (label, stat) in kinds {
        let example = example_line(w, &stat.example);
        let _ = writeln!(
            s,
            "{}",
            fill(
                w.typical_item,
                &[&inline_code(label.name()), &stat.count, &example]
            )
        );
    }
}

fn failing(s: &mut String, v: &View, model: &str) {
    let words = v.words();
    let w = &words.md;
    for spec in v.specs {
        let Some(c) = v.summary.cell(model, &spec.id) else {
            continue;
        };
        if c.failing.is_empty() {
            continue;
        }
        let failed = c.total - c.passed;
        let (name, title) = (inline_code(model), md_cell(&spec.title));
        let heading = fill(w.failed_of, &[&name, &title, &failed, &c.total]);
        let _ = writeln!(s, "{heading}");
        for e in &c.failing {
            let kind = e
                .failure
                .map_or(String::new(), |f| format!(" — {}", inline_code(f.name())));
            let _ = writeln!(s, "\n#### {}{kind}\n", inline_code(&e.id));
            if let Some(err) = &e.error {
                let err = inline_code(&one_line(err, 300));
                let _ = writeln!(s, "{}", fill(w.request_error, &[&err]));
                continue;
            }
            let answer = match e.answer.as_deref().map(str::trim) {
                Some(a) if !a.is_empty() => inline_code(&one_line(a, INLINE_CHARS)),
                _ => w.none.to_owned(),
            };
            // An agent spec expects a state, not an answer: no line says `null`.
            if e.expected != "null" {
                let expected = inline_code(&one_line(&e.expected, 200));
                let _ = writeln!(s, "{}", fill(w.expected, &[&expected, &answer]));
            }
            if !e.detail.is_empty() {
                let detail = inline_code(&one_line(&e.detail, 300));
                let _ = writeln!(s, "{}", fill(w.reason, &[&detail]));
            }
            // Only the reasoning's length: its text would drown the answer.
            if let Some(chars) = e.reasoning_chars {
                let _ = writeln!(s, "{}", fill(w.reasoning_chars, &[&chars]));
            }
            let response = answer_text(e.response.as_deref(), &e.trajectory);
            s.push_str(&code_block(&response.unwrap_or_default()));
        }
        if failed > c.failing.len() as u64 {
            let more = fill(words.and_more, &[&(failed - c.failing.len() as u64)]);
            let _ = writeln!(s, "\n{more}.");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::MetricsBuilder;
    use crate::metrics::tests::{fail, record};
    use crate::report::{ReportContext, SpecInfo};
    use crate::verify::FailureKind;

    #[test]
    fn failing_lists_are_capped_and_ties_named() {
        let mut b = MetricsBuilder::new();
        for i in 0..12 {
            b.add(
                "m",
                &fail(record("m", "s", i), FailureKind::WrongValue, "wrong"),
            );
        }
        let summary = b.finish();
        let (models, specs) = (
            vec!["m".to_owned()],
            vec![SpecInfo {
                title: "S".into(),
                ..SpecInfo::plain("s")
            }],
        );
        let ctx = ReportContext {
            lang: crate::text::Lang::Ru,
            timestamp: "t",
            file_stamp: "f",
            ..ReportContext::new(std::path::Path::new("."), &models, &specs, &[])
        };
        let md = render(&View {
            ctx: &ctx,
            models: &models,
            specs: &specs,
            summary: &summary,
            origins: &[],
            runs: None,
            flaky: &Default::default(),
        });
        assert_eq!(md.matches("\n#### `s/").count(), 10, "{md}");
        assert!(md.contains("\n…и ещё 2.\n"), "{md}");
        assert!(md.contains("не пройдено 12 из 12"), "{md}");
        assert!(md.contains("нет, все категории на одном уровне"), "{md}");
        assert!(md.contains("`wrong_value` — 12; пример `s/0`"), "{md}");
    }
}
