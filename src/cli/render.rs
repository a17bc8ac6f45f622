//! Terminal rendering of diagnostics, in the familiar compiler layout.
//! Control characters in any part (a message may quote a model's answer)
//! are shown escaped.

use owo_colors::OwoColorize;

use crate::error::Diagnostic;
use crate::text::visible;

/// A diagnostic as text: message, location, source line with a caret, help.
pub(super) fn diagnostic(d: &Diagnostic, color: bool) -> String {
    let head = format!("error[{}]", d.kind.label());
    let message = visible(&d.message);
    let head = if color {
        format!("{}: {}\n", head.red().bold(), message.bold())
    } else {
        format!("{head}: {message}\n")
    };
    body(head, d, color)
}

/// A warning as text, laid out as a diagnostic: what may go wrong though
/// nothing is invalid.
pub(super) fn warning(d: &Diagnostic, color: bool) -> String {
    let message = visible(&d.message);
    let head = if color {
        format!("{}: {}\n", "warning".yellow().bold(), message.bold())
    } else {
        format!("warning: {message}\n")
    };
    body(head, d, color)
}

/// `head`, then the location, the source line with a caret and the help.
fn body(mut out: String, d: &Diagnostic, color: bool) -> String {
    let gutter = d.location.line.to_string().len();
    let pad = " ".repeat(gutter);
    out.push_str(&format!("{pad}--> {}\n", d.location));
    if let Some(line) = &d.snippet {
        let caret = format!("{}^", " ".repeat(d.location.column.saturating_sub(1)));
        let caret = if color {
            caret.red().bold().to_string()
        } else {
            caret
        };
        out.push_str(&format!(
            "{pad} |\n{} | {}\n{pad} | {caret}\n",
            d.location.line,
            visible(line)
        ));
    }
    if let Some(help) = &d.help {
        let label = if color {
            "help".cyan().bold().to_string()
        } else {
            "help".to_owned()
        };
        out.push_str(&format!(
            "{pad} = {label}: {}\n",
            visible(help).replace('\n', &format!("\n{pad}   "))
        ));
    }
    out
}
