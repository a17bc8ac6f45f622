//! Reasoning kept apart from the answer. The wires fill
//! [`Completion::reasoning`] from their own fields (`reasoning_content`,
//! `reasoning`, `thinking`); a model that writes its reasoning inline in a
//! `<think>` block has it moved out of the text here, once for every wire, so
//! no rule, extractor or answer ever holds it.

use super::{Completion, Reasoning};

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// The answer and the reasoning of `text`: a `<think>` block is reasoning,
/// what follows its end is the answer. A stray `</think>` (the chat template
/// opened the block) makes everything before it reasoning; a block without
/// an end runs to the end of the text and is marked unclosed.
pub(crate) fn split_think(text: &str) -> (String, Option<Reasoning>) {
    if let Some(end) = text.rfind(CLOSE) {
        let thought = text[..end].replace(OPEN, "").replace(CLOSE, "");
        let answer = text[end + CLOSE.len()..].to_owned();
        return (answer, Reasoning::of(thought.trim().to_owned()));
    }
    match text.find(OPEN) {
        Some(start) => {
            let thought = text[start + OPEN.len()..].trim().to_owned();
            let reasoning = Reasoning {
                text: thought,
                unfinished: true,
                ..Reasoning::default()
            };
            (text[..start].to_owned(), Some(reasoning))
        }
        None => (text.to_owned(), None),
    }
}

impl Completion {
    /// Moves an inline `<think>` block out of the text into the reasoning,
    /// after what the wire reported separately, and marks reasoning that
    /// generation cut off.
    pub(crate) fn separate_reasoning(&mut self) {
        let (answer, inline) = split_think(&self.text);
        self.text = answer;
        if let Some(inline) = inline {
            self.reasoning = Some(match self.reasoning.take() {
                Some(mut wire) => {
                    wire.text = format!("{}\n{}", wire.text, inline.text);
                    wire.unfinished = inline.unfinished;
                    wire
                }
                None => inline,
            });
        }
        let cut = self.finish_reason.as_deref() == Some("length")
            && self.text.trim().is_empty()
            && self.tool_calls.is_empty();
        if let Some(reasoning) = &mut self.reasoning {
            reasoning.unfinished |= cut;
        }
    }

    /// The reasoning's text, empty when the model kept none.
    pub fn reasoning_text(&self) -> &str {
        self.reasoning.as_ref().map_or("", |r| r.text.as_str())
    }

    /// Whether generation stopped while the model was still reasoning.
    pub fn unfinished_reasoning(&self) -> bool {
        self.reasoning.as_ref().is_some_and(|r| r.unfinished)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Usage;

    fn answer(text: &str, finish: Option<&str>) -> Completion {
        let mut c = raw(text, finish);
        c.separate_reasoning();
        c
    }

    fn raw(text: &str, finish: Option<&str>) -> Completion {
        Completion {
            finish_reason: finish.map(str::to_owned),
            ..Completion::new(text, Usage::default())
        }
    }

    #[test]
    fn inline_blocks_become_reasoning_and_never_stay_in_the_answer() {
        // (text, answer, reasoning, unclosed)
        let cases = [
            ("<think>42?</think> 7", " 7", Some("42?"), false),
            ("reasoning 42</think>7", "7", Some("reasoning 42"), false),
            (
                "ok <think>unfinished 42",
                "ok ",
                Some("unfinished 42"),
                true,
            ),
            (
                "<think>a</think>b<think>c</think>d",
                "d",
                Some("ab\nc"),
                false,
            ),
            ("<think>", "", Some(""), true),
            ("<think> </think>5", "5", None, false),
            ("plain 5", "plain 5", None, false),
        ];
        for (text, want, thought, unclosed) in cases {
            let c = answer(text, Some("stop"));
            assert_eq!(c.text, want, "{text}");
            assert!(!c.text.contains("think"), "{text}");
            let r = c.reasoning.as_ref();
            assert_eq!(
                r.map(|r| r.text.replace('\n', "")),
                thought.map(|t| t.replace('\n', "")),
                "{text}"
            );
            assert_eq!(r.is_some_and(|r| r.unfinished), unclosed, "{text}");
        }
    }

    #[test]
    fn wire_reasoning_comes_first_and_inline_follows() {
        let mut c = raw("<think>b</think>5", None);
        c.reasoning = Reasoning::of("a");
        c.separate_reasoning();
        assert_eq!(
            (c.text.as_str(), c.reasoning.unwrap().text.as_str()),
            ("5", "a\nb")
        );
    }

    #[test]
    fn unfinished_is_a_length_stop_inside_reasoning_or_an_unclosed_block() {
        let with = |text: &str, finish: &str| {
            let mut c = raw(text, Some(finish));
            c.reasoning = Reasoning::of("hmm");
            c.separate_reasoning();
            c
        };
        assert!(with("", "length").unfinished_reasoning());
        assert!(with("  \n", "length").unfinished_reasoning());
        assert!(with("<think>still going", "stop").unfinished_reasoning());
        assert!(!with("", "stop").unfinished_reasoning());
        assert!(!with("42", "length").unfinished_reasoning());
        assert!(!answer("", Some("length")).unfinished_reasoning());
    }
}
