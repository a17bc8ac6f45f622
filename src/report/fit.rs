//! Terminal tables that fit the terminal's columns (`COLUMNS`, else 80): a
//! table too wide is pivoted (rows become columns) when that fits, else its
//! columns are split over several tables that each repeat the label column.
//! Long labels end in `…`.
//!
//! Widths count characters, not bytes, so Cyrillic titles line up; color is
//! applied after padding so escape codes never count toward a width.

use owo_colors::OwoColorize;

pub(crate) use crate::text::wrap;
use crate::text::{Align, clip, pad, visible};

/// The terminal width tables fit unless told otherwise.
pub(crate) const WIDTH: usize = 80;

/// How a table is drawn: colored or not, and the columns it must fit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fit {
    /// Color cells by their accuracy.
    pub(crate) color: bool,
    /// The line width, in characters.
    pub(crate) width: usize,
}

impl Fit {
    /// Uncolored, `width` columns.
    pub(crate) fn plain(width: usize) -> Fit {
        Fit {
            color: false,
            width,
        }
    }
}
/// Characters of a label or header kept, `…` included.
const LABEL_CHARS: usize = 28;

/// A cell: its text, and the accuracy to color it by.
pub(crate) type Cell = (String, Option<f64>);

/// Colors an accuracy: green from 80 %, yellow from 50 %, red below.
pub(crate) fn paint(text: &str, accuracy: f64) -> String {
    if accuracy >= 0.8 {
        text.green().to_string()
    } else if accuracy >= 0.5 {
        text.yellow().to_string()
    } else {
        text.red().to_string()
    }
}

/// A label as shown: control characters visible, at most [`LABEL_CHARS`] characters.
pub(crate) fn label(text: &str) -> String {
    let text = visible(text);
    if text.chars().count() > LABEL_CHARS {
        clip(&text, LABEL_CHARS - 1)
    } else {
        text
    }
}

/// The table with its longer dimension in rows: pivoted first, with `corner`
/// as its top-left header, when it has more columns than rows, so a few
/// models over many categories read as one tall table; then fitted.
pub(crate) fn longer_in_rows(
    header: &[String],
    rows: &[Vec<Cell>],
    fit: Fit,
    corner: &str,
) -> String {
    if rows.len() + 1 >= header.len() {
        return fitted(header, rows, fit, Some(corner));
    }
    let (h, r) = pivot(header, rows, corner);
    fitted(&h, &r, fit, header.first().map(String::as_str))
}

/// The table, fitted to `fit.width`: as given, else pivoted with `corner` as
/// its new top-left header (when given), else split into column groups.
pub(crate) fn fitted(
    header: &[String],
    rows: &[Vec<Cell>],
    fit: Fit,
    corner: Option<&str>,
) -> String {
    let Fit { color, width } = fit;
    let header: Vec<String> = header.iter().map(|h| label(h)).collect();
    let rows: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| {
            let mut r = r.clone();
            if let Some(first) = r.first_mut() {
                first.0 = label(&first.0);
            }
            r
        })
        .collect();
    let widths = widths(&header, &rows);
    if line_width(&widths) <= width {
        return grid(&header, &rows, color);
    }
    if let Some(corner) = corner {
        let (h, r) = pivot(&header, &rows, corner);
        if line_width(&self::widths(&h, &r)) <= width {
            return grid(&h, &r, color);
        }
    }
    // Greedy column groups after the label column.
    let mut out = String::new();
    let mut start = 1;
    while start < header.len() {
        let mut end = start + 1;
        let mut used = widths[0] + 2 + widths[start];
        while end < header.len() && used + 2 + widths[end] <= width {
            used += 2 + widths[end];
            end += 1;
        }
        let pick = |r: &[Cell]| -> Vec<Cell> {
            std::iter::once(r[0].clone())
                .chain(r[start..end].iter().cloned())
                .collect()
        };
        let h: Vec<String> = std::iter::once(header[0].clone())
            .chain(header[start..end].iter().cloned())
            .collect();
        let r: Vec<Vec<Cell>> = rows.iter().map(|r| pick(r)).collect();
        if start > 1 {
            out.push('\n');
        }
        out += &grid(&h, &r, color);
        start = end;
    }
    out
}

/// Rows become columns: the new header is `corner` then the row labels.
fn pivot(header: &[String], rows: &[Vec<Cell>], corner: &str) -> (Vec<String>, Vec<Vec<Cell>>) {
    let mut h = vec![corner.to_owned()];
    h.extend(rows.iter().map(|r| r[0].0.clone()));
    let r = (1..header.len())
        .map(|c| {
            let mut row = vec![(header[c].clone(), None)];
            row.extend(rows.iter().map(|r| r[c].clone()));
            row
        })
        .collect();
    (h, r)
}

fn widths(header: &[String], rows: &[Vec<Cell>]) -> Vec<usize> {
    (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].0.chars().count())
                .chain([header[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect()
}

fn line_width(widths: &[usize]) -> usize {
    widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1)
}

/// A table: first column left-aligned, the rest right-aligned, cells colored by their accuracy.
pub(crate) fn grid(header: &[String], rows: &[Vec<Cell>], color: bool) -> String {
    let widths = widths(header, rows);
    let align = |c: usize| if c == 0 { Align::Left } else { Align::Right };
    let line = |cells: Vec<String>| cells.join("  ").trim_end().to_owned() + "\n";
    let mut out = line(
        header
            .iter()
            .enumerate()
            .map(|(c, h)| pad(h, widths[c], align(c)))
            .collect(),
    );
    out += &line(widths.iter().map(|w| "-".repeat(*w)).collect());
    for row in rows {
        let cells = row.iter().enumerate().map(|(c, (text, acc))| {
            let padded = pad(text, widths[c], align(c));
            match acc {
                Some(a) if color => paint(&padded, *a),
                _ => padded,
            }
        });
        out += &line(cells.collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(columns: usize, rows: usize) -> (Vec<String>, Vec<Vec<Cell>>) {
        let mut header = vec!["model".to_owned()];
        header.extend((0..columns).map(|c| format!("category {c}")));
        let rows = (0..rows)
            .map(|r| {
                let mut row = vec![(format!("model-{r}"), None)];
                row.extend((0..columns).map(|_| ("42.0% ±3.1".to_owned(), Some(0.42))));
                row
            })
            .collect();
        (header, rows)
    }

    fn widest(text: &str) -> usize {
        text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
    }

    #[test]
    fn thresholds() {
        assert_eq!(paint("x", 0.8), "\u{1b}[32mx\u{1b}[39m");
        assert_eq!(paint("x", 0.5), "\u{1b}[33mx\u{1b}[39m");
        assert_eq!(paint("x", 0.49), "\u{1b}[31mx\u{1b}[39m");
    }

    /// A narrow table stays as is; many categories pivot when the models fit.
    #[test]
    fn narrow_tables_stay_and_long_ones_pivot() {
        for (categories, starts, lines) in [(3, "model  ", 4), (16, "category ", 18)] {
            let (h, r) = table(categories, 2);
            let text = fitted(&h, &r, Fit::plain(WIDTH), Some("category"));
            assert!(widest(&text) <= WIDTH, "{text}");
            assert!(text.starts_with(starts), "{text}");
            assert_eq!(text.lines().count(), lines);
        }
    }

    /// Two models over 19 categories: one table, a category a row, at any width;
    /// more models than categories keep models as rows.
    #[test]
    fn the_longer_dimension_goes_in_rows() {
        for width in [WIDTH, 200] {
            let (h, r) = table(19, 2);
            let text = longer_in_rows(&h, &r, Fit::plain(width), "category");
            assert!(text.starts_with("category "), "{text}");
            assert_eq!(text.lines().count(), 2 + 19, "{text}");
            assert!(!text.contains('—'), "{text}");
        }
        let (h, r) = table(3, 5);
        let text = longer_in_rows(&h, &r, Fit::plain(WIDTH), "category");
        assert!(text.starts_with("model "), "{text}");
        assert_eq!(text.lines().count(), 2 + 5, "{text}");
    }

    #[test]
    fn too_wide_both_ways_splits_the_columns() {
        let (h, r) = table(16, 12);
        let text = fitted(&h, &r, Fit::plain(WIDTH), Some("category"));
        assert!(widest(&text) <= WIDTH, "{text}");
        assert!(
            text.matches("model-11").count() > 1,
            "labels repeat: {text}"
        );
        for c in 0..16 {
            assert_eq!(
                text.matches(&format!("category {c} ")).count()
                    + text.matches(&format!("category {c}\n")).count(),
                1,
                "{text}"
            );
        }
        // A terminal wide enough (COLUMNS) takes the same table whole.
        let wide = fitted(&h, &r, Fit::plain(240), Some("category"));
        assert!((WIDTH + 1..=240).contains(&widest(&wide)), "{wide}");
        assert_eq!(wide.lines().count(), 2 + 12, "{wide}");
    }

    #[test]
    fn wrapping_keeps_lines_short() {
        let text = wrap(&"word ".repeat(40), 30);
        assert!(text.lines().all(|l| l.chars().count() <= 30), "{text}");
        assert!(
            text.lines().skip(1).all(|l| l.starts_with("  word")),
            "{text}"
        );
        assert_eq!(text.matches("word").count(), 40);
        assert_eq!(wrap("short", 80), "short\n");
    }

    #[test]
    fn long_labels_are_cut_and_controls_shown() {
        assert_eq!(label(&"x".repeat(40)).chars().count(), LABEL_CHARS);
        assert_eq!(label("a\u{1b}[31mb"), "a\\u001B[31mb");
    }
}
