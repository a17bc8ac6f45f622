//! A `[choices]` spec's task: its request as the method asks (one token
//! with alternatives, or each choice scored after the prompt's text), and
//! the verdict from what the answer carried.

use serde_json::{Map, Value};

use crate::format::ChoiceMethod;
use crate::prompt::{ChoiceOutcome, Logprobs};
use crate::provider::{ChatRequest, Completion};
use crate::spec::Spec;
use crate::verify::{FailureKind, InstanceVerdict};

/// What a `first_token` request may generate; only the first token is read.
const FIRST_TOKEN_MAX_TOKENS: u32 = 4;

/// `base` as a `[choices]` method asks: one token with its alternatives
/// (`first_token`), or each choice scored after the prompt's text
/// (`loglikelihood`); `generate` asks as any spec does.
pub(super) fn choice_request(
    s: &Spec,
    inst: &crate::spec::Instance,
    base: &mut ChatRequest,
) -> Result<(), crate::error::Diagnostic> {
    let (Some(choices), Some(set)) = (s.choices(), s.choice_set(inst.index, &inst.vars)?) else {
        return Ok(());
    };
    match choices.method {
        ChoiceMethod::Generate => {}
        ChoiceMethod::FirstToken => {
            // A few tokens, not one: llama-server lists no log-probabilities
            // for an answer that ends inside a UTF-8 character.
            base.max_tokens = FIRST_TOKEN_MAX_TOKENS;
            base.logprobs = Some(choices.top);
        }
        ChoiceMethod::Loglikelihood => {
            let context = inst.messages.iter().map(|m| m.content.as_str()).collect();
            base.max_tokens = 1;
            base.logprobs = Some(1);
            base.score = Some(crate::provider::ScoreRequest {
                context,
                continuations: choices.continuations(&set),
            });
        }
    }
    Ok(())
}

/// The verdict of `completion` to instance `index` of a `[choices]` spec,
/// with the outcome when it could be scored; `None` for other specs.
pub(super) fn verdict(
    s: &Spec,
    index: u64,
    vars: &Map<String, Value>,
    completion: &Completion,
) -> Option<(Option<ChoiceOutcome>, InstanceVerdict)> {
    let choices = s.choices()?;
    let set = match s.choice_set(index, vars) {
        Ok(set) => set?,
        Err(d) => {
            return Some((
                None,
                InstanceVerdict::failed(FailureKind::GenerationError, d.message),
            ));
        }
    };
    let logprobs = completion.logprobs.as_deref();
    Some(match choices.score(&set, &completion.text, logprobs) {
        Ok((outcome, verdict)) => (Some(outcome), verdict),
        Err(why) => (
            None,
            InstanceVerdict::failed(FailureKind::MalformedResponse, why.to_string()),
        ),
    })
}

/// What a record keeps of an answer's log-probabilities: for `first_token`,
/// the first token alone, which is all the method reads (the tokens after
/// it vary in their last digits from one server process to another, so a
/// golden transcript could not hold them); else all of them.
pub(super) fn kept(s: &Spec, logprobs: Option<Box<Logprobs>>) -> Option<Box<Logprobs>> {
    let first_token = s
        .choices()
        .is_some_and(|c| c.method == ChoiceMethod::FirstToken);
    logprobs.map(|mut l| {
        if first_token {
            l.tokens.truncate(1);
        }
        l
    })
}
