//! `results/reports/report_<stamp>.md`: the Russian report users of the
//! «Базовый Контроль» checks expect (its headings fixed), followed by per-model tables, the analysis and failing instances.

use std::fmt::Write as _;

use crate::metrics::{Example, Metrics};

use super::View;
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
    s.push_str("# Отчет о Тестировании LLM\n\n");
    // Separate paragraphs, so renderers keep one fact per line.
    let _ = writeln!(s, "**Дата и время:** {}\n", v.ctx.timestamp);
    let _ = writeln!(s, "**Протестированные модели:** {}\n", models.join(", "));
    let _ = writeln!(s, "**Запуски:** {}\n", runs.join(", "));
    if let Some(line) = super::sandbox_line(v.ctx) {
        let _ = writeln!(s, "**Песочница:** {line}\n");
    }
    s.push_str("## Сводная Таблица Результатов\n\n");
    s.push_str(&summary_table(v));
    s.push_str(&summary_note(v));
    s.push_str(&super::statistics::leaderboard(v));
    s.push_str(&super::statistics::categories(v));
    s.push_str(&super::statistics::runs(v));
    groups(&mut s, v);
    comparisons(&mut s, v);
    s.push_str(&super::statistics::flaky(v));
    s.push_str(&super::judge_stats::markdown(v));
    s.push_str(&super::costs::markdown(v));
    s.push_str(&super::endpoints::markdown(v));
    s.push_str("\n## Результаты по Моделям\n");
    for m in v.models {
        details(&mut s, v, m);
    }
    s.push_str("\n## Детальный Анализ\n");
    for m in v.models {
        analysis(&mut s, v, m);
    }
    s.push_str("\n## Непройденные Задания\n");
    let before = s.len();
    for m in v.models {
        failing(&mut s, v, m);
    }
    if s.len() == before {
        s.push_str("\nВсе задания пройдены.\n");
    }
    s
}

fn summary_table(v: &View) -> String {
    let mut header = vec!["Модель / Категория".to_owned()];
    header.extend(v.specs.iter().map(|s| md_cell(&s.title)));
    header.push("**ИТОГО**".to_owned());
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
    let mut note =
        "\nЯчейка — доля пройденных заданий (прошли все правила, включая обязательные)".to_owned();
    if !scored.is_empty() {
        let _ = write!(
            note,
            ", кроме категорий со средним баллом (частичный зачёт по весам правил): {}",
            scored.join(", ")
        );
    }
    note.push_str(". **ИТОГО** — среднее этих чисел по категориям, по нему строится рейтинг; строка «Всего» ниже — по всем заданиям модели. ± — половина 95% доверительного интервала (Вильсон по заданиям для «верно/неверно» и для одинаковых оценок, иначе бутстреп по заданиям).\n");
    note
}

/// `group_by` breakdowns: per spec and variable, models × values.
fn groups(s: &mut String, v: &View) {
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
                s.push_str("\n## Результаты по Группам\n");
                heading = true;
            }
            let header = header_row("Модель", values.iter().map(|k| md_cell(k)));
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
            let _ = writeln!(s, "\n### {title} — по {by}\n");
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
    s.push_str("\n## Сравнение Моделей (сэмплирование)\n");
    for c in &all {
        let _ = writeln!(s, "\n### {}\n", md_cell(&c.title));
        let has_maj = c.models.iter().any(|l| l.maj.is_some());
        let mut header = vec!["Модель".to_owned(), "Доля пройденных".to_owned()];
        header.extend(c.ks.iter().map(|k| format!("pass@{k}")));
        let hats = super::comparison::hat_ks(c);
        header.extend(hats.iter().map(|k| format!("pass^{k}")));
        if has_maj {
            header.push("maj@n".to_owned());
        }
        header.push("Уровень".to_owned());
        if c.baseline.is_some() {
            header.push("Против базовой".to_owned());
        }
        let rows: Vec<Vec<String>> = c
            .models
            .iter()
            .map(|l| {
                let mut row = vec![bold(&l.model), percent(l.pass_rate)];
                row.extend(
                    c.ks.iter()
                        .map(|k| l.pass_at_k.get(k).map_or(NONE.into(), |p| percent(*p))),
                );
                row.extend(
                    hats.iter()
                        .map(|k| l.pass_hat_k.get(k).map_or(NONE.into(), |p| percent(*p))),
                );
                if has_maj {
                    row.push(l.maj.map_or(NONE.into(), percent));
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
            let best = c.best.as_deref().map_or(
                "нет (ни одна модель не лучше значимо)".to_owned(),
                inline_code,
            );
            let _ = write!(s, "\n**Лучшая модель:** {best}");
            if let Some(base) = &c.baseline {
                let _ = write!(s, "; базовая: {}", inline_code(base));
            }
            s.push('\n');
        }
        for (rule, lines) in super::comparison::alongside(c) {
            let _ = writeln!(
                s,
                "\n#### Правило {} (только для отчета)\n",
                inline_code(rule)
            );
            let mut header = vec!["Модель".to_owned(), "Доля пройденных".to_owned()];
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
            let label = top.map_or(String::new(), |k| format!(" / pass@{k}"));
            let by = inline_code(var);
            let _ = writeln!(s, "\n#### По {by} (доля пройденных{label})\n");
            let header = header_row("Модель", values.iter().map(|v| md_cell(v)));
            let rows: Vec<Vec<String>> = c
                .models
                .iter()
                .map(|l| {
                    let mut row = vec![bold(&l.model)];
                    row.extend(values.iter().map(|value| {
                        l.groups
                            .get(var)
                            .and_then(|g| g.get(*value))
                            .map_or(NONE.into(), |g| g.with_pass_at(top))
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
    let _ = writeln!(s, "\n### {}\n", inline_code(model));
    let Some(total) = v.summary.model(model) else {
        s.push_str("Нет записей.\n");
        return;
    };
    let header: Vec<String> = [
        "Категория",
        "Итог ±95%",
        "Доля пройденных",
        "Средний балл",
        "Верно",
        "Валидные",
        "Ошибки",
        "Кэш",
        "Время ср., мс",
        "p50, мс",
        "p95, мс",
        "Токены вх., ср.",
        "Токены вых., ср.",
        "Токенов/с",
    ]
    .map(str::to_owned)
    .to_vec();
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
    rows.push(metric_row("**Всего**".into(), total));
    s.push_str(&label_table(&header, &rows));
}

/// How an example went wrong, on one line: the response and detail, or the request error.
fn example_line(e: &Example) -> String {
    let mut line = inline_code(&e.id);
    if let Some(err) = &e.error {
        let _ = write!(
            line,
            ": ошибка {}",
            inline_code(&one_line(err, INLINE_CHARS))
        );
        return line;
    }
    let response = e.response.as_deref().unwrap_or_default();
    let _ = write!(
        line,
        ": ответ {}",
        inline_code(&one_line(response, INLINE_CHARS))
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
    let _ = writeln!(s, "\n*   **Сильные стороны модели {name}:** {}", list(best));
    if worst < best {
        let _ = writeln!(s, "*   **Слабые стороны модели {name}:** {}", list(worst));
    } else {
        let _ = writeln!(
            s,
            "*   **Слабые стороны модели {name}:** нет, все категории на одном уровне"
        );
    }
    if total.failures.is_empty() {
        let _ = writeln!(s, "*   **Типичные ошибки модели {name}:** нет");
        return;
    }
    let _ = writeln!(s, "*   **Типичные ошибки модели {name}:**");
    let mut kinds: Vec<_> = total.failures.iter().collect();
    kinds.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
    for (label, stat) in kinds {
        let _ = writeln!(
            s,
            "    *   {} — {}; пример {}",
            inline_code(label),
            stat.count,
            example_line(&stat.example)
        );
    }
}

fn failing(s: &mut String, v: &View, model: &str) {
    for spec in v.specs {
        let Some(c) = v.summary.cell(model, &spec.id) else {
            continue;
        };
        if c.failing.is_empty() {
            continue;
        }
        let failed = c.total - c.passed;
        let _ = writeln!(
            s,
            "\n### {} — {}: не пройдено {failed} из {}",
            inline_code(model),
            md_cell(&spec.title),
            c.total
        );
        for e in &c.failing {
            let kind = e
                .failure
                .as_deref()
                .map_or(String::new(), |f| format!(" — {}", inline_code(f)));
            let _ = writeln!(s, "\n#### {}{kind}\n", inline_code(&e.id));
            if let Some(err) = &e.error {
                let _ = writeln!(s, "Ошибка запроса: {}", inline_code(&one_line(err, 300)));
                continue;
            }
            let answer = match e.answer.as_deref().map(str::trim) {
                Some(a) if !a.is_empty() => inline_code(&one_line(a, INLINE_CHARS)),
                _ => "нет".to_owned(),
            };
            let _ = writeln!(
                s,
                "Ожидалось: {}; извлечено: {answer}\n",
                inline_code(&one_line(&e.expected, 200))
            );
            if !e.detail.is_empty() {
                let _ = writeln!(s, "Причина: {}\n", inline_code(&one_line(&e.detail, 300)));
            }
            s.push_str(&code_block(e.response.as_deref().unwrap_or_default()));
        }
        if failed > c.failing.len() as u64 {
            let _ = writeln!(s, "\n…и ещё {}.", failed - c.failing.len() as u64);
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
