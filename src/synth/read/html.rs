//! HTML to text: the visible prose of a page, without scripts, styles,
//! navigation, headers, footers and forms, one line per block element.

use scraper::{ElementRef, Html, Node};

/// Elements whose content is never prose: code, styling, navigation and page chrome.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form",
    "button", "select", "svg", "iframe", "head", "menu",
];

/// Elements that start a new line.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "tr",
    "table",
    "section",
    "article",
    "main",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "blockquote",
    "dt",
    "dd",
    "figcaption",
    "hr",
    "body",
];

/// The text of an HTML document.
pub(super) fn text(source: &str) -> String {
    let document = Html::parse_document(source);
    let mut out = String::new();
    walk(document.root_element(), &mut out);
    // Collapse the layout's whitespace: single spaces inside lines, no blank runs.
    out.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn walk(element: ElementRef<'_>, out: &mut String) {
    let name = element.value().name();
    let role = element.value().attr("role").unwrap_or_default();
    if SKIPPED.contains(&name) || role == "navigation" || element.value().attr("hidden").is_some() {
        return;
    }
    let block = BLOCKS.contains(&name);
    if block {
        out.push('\n');
    }
    for child in element.children() {
        match child.value() {
            Node::Text(t) => out.push_str(t),
            Node::Element(_) => {
                if let Some(e) = ElementRef::wrap(child) {
                    walk(e, out);
                }
            }
            _ => {}
        }
    }
    if block {
        out.push('\n');
    } else {
        // Inline neighbours (`<td>a</td><td>b</td>`) must not run together.
        out.push(' ');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_prose_and_drops_scripts_styles_and_navigation() {
        let page = r#"<!doctype html><html><head><title>T</title><style>p { color: red }</style>
            <script>var secret = 1;</script></head><body>
            <nav><a href="/">Home</a> | <a href="/about">About</a></nav>
            <div role="navigation">Menu</div>
            <h1>Фотосинтез</h1>
            <p>Растения превращают <b>свет</b> в энергию.</p>
            <ul><li>Хлорофилл</li><li>Вода</li></ul>
            <footer>© 2024</footer><script>track()</script></body></html>"#;
        let text = text(page);
        assert_eq!(
            text,
            "Фотосинтез\nРастения превращают свет в энергию.\nХлорофилл\nВода"
        );
    }
}
