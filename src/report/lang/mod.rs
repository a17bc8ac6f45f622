//! Every phrase the human-readable reports print (terminal summary, Markdown,
//! CSV headers, the HTML page's text), one table per language: [`en`] and
//! [`ru`]. Renderers look phrases up in the [`Words`] of the report's
//! language and never branch on it. Model text, ids and machine formats (JSON
//! keys, raw files) are never translated.
//!
//! A phrase with `{}` takes arguments in order ([`fill`]).

mod en;
mod html_ru;
mod ru;

use std::fmt::Display;

use crate::metrics::Headline;
pub(crate) use crate::text::Lang;

/// The phrases of one language. Fields prefixed `md_` are Markdown, `t_`
/// the terminal summary; the rest are shared.
pub(crate) struct Words {
    /// The headline `pass rate`, as a column name.
    pub pass_rate: &'static str,
    /// The headline `mean score`, as a column name.
    pub mean_score: &'static str,
    /// The leaderboard total when specs' headlines differ.
    pub total: &'static str,
    /// The model column.
    pub model: &'static str,
    /// The category column.
    pub category: &'static str,
    /// Percentage points, after a number.
    pub pp: &'static str,
    /// `…and {} more`.
    pub and_more: &'static str,
    /// The exact McNemar test with its interval.
    pub test_mcnemar: &'static str,
    /// The paired bootstrap.
    pub test_bootstrap: &'static str,
    /// The CSV report's header row.
    pub csv_header: [&'static str; 38],
    /// The CSV column of a measure's mean: `mean {}`.
    pub csv_measure: &'static str,
    /// The CSV columns added when some cell has reasoning.
    pub csv_reasoning: [&'static str; 3],
    /// The reasoning table's header: model, spec, answers with reasoning,
    /// mean reasoning tokens, unfinished reasoning, other failures.
    pub reasoning_header: [&'static str; 6],
    /// The simulated users' table header: model, spec, `user_error`, the
    /// agent's own failures.
    pub users_header: [&'static str; 4],
    /// The CSV columns added when some cell is multiple choice.
    pub csv_choices: [&'static str; 5],
    /// The multiple-choice table's header: model, spec, answers, acc,
    /// acc_norm, ECE, Brier, missing labels.
    pub choices_header: [&'static str; 8],
    /// `(English, translation)` pairs of the HTML page's text; empty for English.
    pub html: &'static [(&'static str, &'static str)],
    /// The Markdown report's phrases.
    pub md: Markdown,
    /// The terminal summary's phrases.
    pub t: Terminal,
}

/// The Markdown report's phrases, in the report's order.
pub(crate) struct Markdown {
    /// `# ...` with its blank line.
    pub title: &'static str,
    /// `**Date and time:**`.
    pub date: &'static str,
    /// `**Tested models:**`.
    pub models: &'static str,
    /// `**Runs:**`.
    pub runs: &'static str,
    /// `**Sandbox:**`.
    pub sandbox: &'static str,
    /// The summary table's heading, with its blank line.
    pub summary: &'static str,
    /// The summary table's first header cell.
    pub model_category: &'static str,
    /// The summary table's total column.
    pub total: &'static str,
    /// The summary note: what a cell is.
    pub note_cell: &'static str,
    /// The summary note: `{}` categories headlined by mean score.
    pub note_scored: &'static str,
    /// The summary note's end: the total and the intervals.
    pub note_rest: &'static str,
    /// The group breakdown section's heading.
    pub groups: &'static str,
    /// `### {title} — by {var}`.
    pub by: &'static str,
    /// The sampled comparison section's heading.
    pub sampled: &'static str,
    /// The tier column.
    pub tier: &'static str,
    /// The change-against-baseline column.
    pub vs_baseline: &'static str,
    /// `**Best model:** {}`.
    pub best: &'static str,
    /// No best model.
    pub best_none: &'static str,
    /// `; baseline: {}`.
    pub baseline: &'static str,
    /// `#### Rule {} (report only)`.
    pub rule_report_only: &'static str,
    /// `#### By {} (pass rate{})`.
    pub by_pass: &'static str,
    /// A model without records.
    pub no_records: &'static str,
    /// The per-model tables' heading.
    pub per_model: &'static str,
    /// The per-model table's header.
    pub details: [&'static str; 14],
    /// The per-model table's last row.
    pub total_row: &'static str,
    /// The analysis heading.
    pub analysis: &'static str,
    /// `*   **Strengths of {model}:** {list}`.
    pub strengths: &'static str,
    /// `*   **Weaknesses of {model}:** {list}`.
    pub weaknesses: &'static str,
    /// Every category scores the same.
    pub weaknesses_none: &'static str,
    /// `*   **Typical errors of {model}:**`.
    pub typical: &'static str,
    /// No, none.
    pub none: &'static str,
    /// `    *   {label} — {count}; example {example}`.
    pub typical_item: &'static str,
    /// `: error {}` of an example.
    pub example_error: &'static str,
    /// `: response {}` of an example.
    pub example_response: &'static str,
    /// The measures section's heading.
    pub measures: &'static str,
    /// `### {title}` of a spec's measures table.
    pub measures_spec: &'static str,
    /// What the measures tables' numbers are.
    pub measures_note: &'static str,
    /// The reasoning section's heading.
    pub reasoning: &'static str,
    /// What the reasoning table's numbers are.
    pub reasoning_note: &'static str,
    /// The simulated users' section heading.
    pub users: &'static str,
    /// What the simulated users' table's numbers are.
    pub users_note: &'static str,
    /// The multiple-choice section's heading.
    pub choices: &'static str,
    /// What the multiple-choice table's numbers are.
    pub choices_note: &'static str,
    /// `Reasoning: {} characters` under a failed answer that kept reasoning.
    pub reasoning_chars: &'static str,
    /// The failing instances' heading.
    pub failing: &'static str,
    /// Every instance passed.
    pub all_passed: &'static str,
    /// `### {model} — {title}: {failed} of {total} failed`.
    pub failed_of: &'static str,
    /// `Request error: {}`.
    pub request_error: &'static str,
    /// `Expected: {}; extracted: {}`.
    pub expected: &'static str,
    /// `Reason: {}`.
    pub reason: &'static str,
    /// The leaderboard's heading.
    pub ranking: &'static str,
    /// A board's header; the third column is the headline's name.
    pub board: [&'static str; 6],
    /// `{name}: the total ...` under the leaderboard, `{}` its test.
    pub ranking_note: &'static str,
    /// `No records: {}.`.
    pub unranked: &'static str,
    /// Models not ranked as they ran other categories, `{}` their names.
    pub apart: &'static str,
    /// The per-category significance heading.
    pub significance: &'static str,
    /// `Instances: {}; test: {}.`.
    pub instances_test: &'static str,
    /// The smallest gap a category detects, `{}` points.
    pub mde: &'static str,
    /// Instances needed to tell the two best apart: gap, count.
    pub gap: &'static str,
    /// The run comparison's heading and `{}` the baseline run.
    pub run_comparison: &'static str,
    /// `### {} against {}`.
    pub against: &'static str,
    /// The run comparison's header.
    pub run_header: [&'static str; 6],
    /// `**Overall:** {} ({}, {}).`.
    pub overall: &'static str,
    /// Regressions and fixes between runs.
    pub flips: [&'static str; 2],
    /// The flaky section's heading.
    pub flaky: &'static str,
    /// The stability table's header.
    pub flaky_header: [&'static str; 7],
    /// What pass@k and pass^k are.
    pub flaky_note: &'static str,
    /// The flaky instances' header.
    pub flaky_instances: [&'static str; 3],
    /// `…and {} more`, all in the HTML report.
    pub flaky_more: &'static str,
    /// The judge section's heading.
    pub judge: &'static str,
    /// The judge table's header.
    pub judge_header: [&'static str; 10],
    /// What the judge table's numbers are.
    pub judge_note: &'static str,
    /// Judges or rubrics differ.
    pub judge_mixed: &'static str,
    /// The cost section's heading.
    pub cost: &'static str,
    /// What the cost table's amounts are, `{}` the currency.
    pub cost_note: &'static str,
    /// The cost table's columns after the categories.
    pub cost_header: [&'static str; 4],
    /// The run cost line's words.
    pub cost_run: [&'static str; 4],
    /// The pool section's heading.
    pub pools: &'static str,
    /// What the pool table is.
    pub pools_note: &'static str,
    /// The pool table's header.
    pub pools_header: [&'static str; 7],
    /// The sweep section's heading.
    pub sweeps: &'static str,
    /// What the sweep tables are, `{}` the currency.
    pub sweeps_note: &'static str,
    /// One sweep's line: model, category, key.
    pub sweep: &'static str,
    /// A sweep table's columns after the key and the headline.
    pub sweep_header: [&'static str; 3],
}

/// The terminal summary's phrases.
pub(crate) struct Terminal {
    /// The leaderboard's columns after the total.
    pub board: [&'static str; 4],
    /// No sampled results for the baseline: model, spec.
    pub no_baseline: &'static str,
    /// `sandbox: {}`.
    pub sandbox: &'static str,
    /// `{title}: mean measures ...` over a spec's measures table.
    pub measures: &'static str,
    /// The measures table's group column.
    pub measures_group: &'static str,
    /// The heading over the reasoning table.
    pub reasoning: &'static str,
    /// The heading over the simulated users' table.
    pub users: &'static str,
    /// The heading over the multiple-choice table.
    pub choices: &'static str,
    /// The closing note when every cell is a mean score.
    pub note_mean: &'static str,
    /// The closing note when headlines differ.
    pub note_mixed: &'static str,
    /// The closing note when every cell is a pass rate.
    pub note_pass: &'static str,
    /// The closing note's end, `{}` the ranked number.
    pub note_rest: &'static str,
    /// Added to the closing note when some model stands unranked.
    pub note_unranked: &'static str,
    /// The mean score table's heading.
    pub mean_scores: &'static str,
    /// `{title} by {var} ({headline} ±95%):`.
    pub by: &'static str,
    /// `{later} against {baseline}`.
    pub against: &'static str,
    /// The run comparison's header.
    pub pair_header: [&'static str; 5],
    /// Regressions and fixes between runs.
    pub flips: [&'static str; 2],
    /// `{title} (sampled):`.
    pub sampled: &'static str,
    /// `{title}: {rule} (report only):`.
    pub report_only: &'static str,
    /// `{title} by {var}: {label}`.
    pub sampled_by: &'static str,
    /// The pivot label of sampled tables.
    pub metric: &'static str,
    /// The tier column.
    pub tier: &'static str,
    /// The change-against-baseline column.
    pub vs_baseline: &'static str,
    /// `best: {}`.
    pub best: &'static str,
    /// No best model.
    pub best_none: &'static str,
    /// ` (baseline: {})`.
    pub baseline: &'static str,
    /// `cost ({currency})`.
    pub cost: &'static str,
    /// The cost table's columns after the categories.
    pub cost_header: [&'static str; 4],
    /// The run cost line's words.
    pub cost_run: [&'static str; 4],
    /// The pool table's header.
    pub pools_header: [&'static str; 7],
    /// One judge's line: judge, model, spec, rule, rubric, judged, errors, mean, spread.
    pub judge: &'static str,
    /// Judges or rubrics differ.
    pub judge_mixed: &'static str,
    /// `{errors} of {answers} answers are errors ...; most common causes:`.
    pub errors: &'static str,
    /// `and {} more causes`, all in the Markdown report.
    pub errors_more: &'static str,
}

/// The phrases of `lang`.
pub(crate) fn words(lang: Lang) -> &'static Words {
    match lang {
        Lang::En => &en::EN,
        Lang::Ru => &ru::RU,
    }
}

impl Words {
    /// The name of a headline number, as a column name.
    pub(crate) fn headline(&self, h: Headline) -> &'static str {
        match h {
            Headline::PassRate => self.pass_rate,
            Headline::MeanScore => self.mean_score,
        }
    }
}

/// `template` with each `{}` replaced by the next of `args`, in order.
pub(crate) fn fill(template: &str, args: &[&dyn Display]) -> String {
    let mut out = String::with_capacity(template.len() + 16);
    let mut parts = template.split("{}");
    out.push_str(parts.next().unwrap_or_default());
    for (k, part) in parts.enumerate() {
        if let Some(a) = args.get(k) {
            out.push_str(&a.to_string());
        }
        out.push_str(part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Placeholders of every template, so a translation takes the same arguments.
    fn holes(t: &str) -> usize {
        t.matches("{}").count()
    }

    #[test]
    fn translations_take_the_same_arguments() {
        let (en, ru) = (words(Lang::En), words(Lang::Ru));
        let pairs = [
            (en.md.by, ru.md.by),
            (en.md.best, ru.md.best),
            (en.md.strengths, ru.md.strengths),
            (en.md.failed_of, ru.md.failed_of),
            (en.md.expected, ru.md.expected),
            (en.md.ranking_note, ru.md.ranking_note),
            (en.md.apart, ru.md.apart),
            (en.md.gap, ru.md.gap),
            (en.md.typical_item, ru.md.typical_item),
            (en.t.note_rest, ru.t.note_rest),
            (en.t.judge, ru.t.judge),
            (en.t.by, ru.t.by),
            (en.t.sampled_by, ru.t.sampled_by),
            (en.t.no_baseline, ru.t.no_baseline),
            (en.t.errors, ru.t.errors),
            (en.t.errors_more, ru.t.errors_more),
        ];
        for (a, b) in pairs {
            assert_eq!(holes(a), holes(b), "{a} / {b}");
        }
        for (e, r) in ru.html {
            assert_eq!(e.matches('{').count(), r.matches('{').count(), "{e} / {r}");
        }
        assert!(en.html.is_empty());
        // Every phrase the page's script looks up has its translation.
        let script = [
            include_str!("../html/lib.js"),
            include_str!("../html/overview.js"),
            include_str!("../html/instances.js"),
            include_str!("../html/views.js"),
        ]
        .concat()
        .replace("\\'", "\u{1}")
        .replace("' +\n      '", "");
        let mut looked_up = 0;
        for call in script.split("t('").skip(1) {
            let phrase = call
                .split('\'')
                .next()
                .unwrap_or_default()
                .replace('\u{1}', "'");
            // `select('status'` and the like end in `t(` too: only `t(` calls count.
            if script.contains(&format!(" t('{}'", phrase.replace('\'', "\\'")))
                || script.contains(&format!("(t('{}'", phrase.replace('\'', "\\'")))
            {
                looked_up += 1;
                assert!(
                    ru.html.iter().any(|(e, _)| *e == phrase),
                    "no Russian for {phrase:?}"
                );
            }
        }
        assert!(looked_up > 80, "{looked_up}");
        assert_eq!(fill("a {} b {}.", &[&1, &"x"]), "a 1 b x.");
    }
}
