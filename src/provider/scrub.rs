//! What a server sent back, cleaned before anyone reads it: every
//! configured API key removed from answers, reasoning, call arguments and
//! error texts.

use super::{Completion, ProviderError, tool_wire};

/// Removes every configured API key from what a server sent back (an error
/// body that echoes the key, an answer that repeats it), and the credentials
/// of any URL an error quotes (an answer's URLs are scored as written).
pub(super) fn scrub(
    result: Result<Vec<Completion>, ProviderError>,
) -> Result<Vec<Completion>, ProviderError> {
    let clean = |text: &mut String| {
        if let std::borrow::Cow::Owned(clean) = crate::secrets::redact(text) {
            *text = clean;
        }
    };
    match result {
        Ok(mut completions) => {
            for c in &mut completions {
                clean(&mut c.text);
                if let Some(r) = &mut c.reasoning {
                    clean(&mut r.text);
                    // A key in a signed block breaks its signature: better a refused turn than a leak.
                    for block in &mut r.blocks {
                        tool_wire::scrub_value(block, &clean);
                    }
                }
                for call in &mut c.tool_calls {
                    tool_wire::scrub_value(&mut call.arguments, &clean);
                }
            }
            Ok(completions)
        }
        Err(mut e) => {
            match &mut e {
                ProviderError::Connection(t)
                | ProviderError::Malformed(t)
                | ProviderError::NotRecorded(t)
                | ProviderError::Config(t)
                | ProviderError::Program(t)
                | ProviderError::ImageChanged(t)
                | ProviderError::NoLogprobs(t)
                | ProviderError::NoPromptLogprobs(t)
                | ProviderError::Status { body: t, .. } => {
                    // Errors quote the URL they were sent to (reqwest's do), query keys and all.
                    *t = crate::secrets::redact_urls(t).into_owned();
                    clean(t);
                }
                ProviderError::Timeout(_) | ProviderError::TooLarge { .. } => {}
            }
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::Reasoning;

    #[test]
    fn keys_leave_reasoning_text_and_its_kept_blocks() {
        let key = "sk-scrub-reasoning-0123456789";
        crate::secrets::register(key);
        let said = format!("my key is {key}");
        let block = serde_json::json!({"type": "thinking", "thinking": said, "signature": "s"});
        let answer = Completion {
            reasoning: Some(Reasoning {
                text: said.clone(),
                blocks: vec![block],
                ..Reasoning::default()
            }),
            ..Completion::new(said, super::super::Usage::default())
        };
        let clean = scrub(Ok(vec![answer])).unwrap().remove(0);
        let all = serde_json::to_string(&clean.reasoning).unwrap() + clean.text.as_str();
        assert!(!all.contains(key) && all.contains("[redacted]"), "{all}");
        assert_eq!(clean.reasoning.unwrap().blocks[0]["signature"], "s");
    }
}
