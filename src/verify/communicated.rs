//! `communicated`: each required piece of information appears in one of the
//! agent's replies, as τ²-bench's communicate check reads them: a string is
//! found in a message when it occurs in the message lowercased with its
//! commas removed (`1,939.05` in a reply matches `1939.05`), the string itself
//! only lowercased. Every assistant message with text counts, those that
//! also call tools included; tool results and the user's turns do not.

use serde_json::{Map, Value};

use super::kind::RuleKind;
use super::shared::{ValueProblem, read_variable, variable_key, variable_problems};
use super::{BuildContext, FailureKind, Reads, ReadsReply, Reply, Rule, Verdict};
use crate::error::Diagnostic;
use crate::text::{clip, json_kind};

/// The most characters of a missing piece the failure detail shows.
const SHOWN: usize = 80;

/// `communicated`: every string of `info` (a variable holding a list of
/// strings) occurs in one of the agent's messages, case-insensitively and
/// with the message's commas removed (τ²-bench's `communicate_info`).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CommunicatedKeys {
    /// The instance variable (a dotted path) holding the list of strings to communicate.
    pub info: Option<String>,
}

impl RuleKind for CommunicatedKeys {
    fn build(self, cx: &BuildContext) -> Result<Box<dyn Rule>, Diagnostic> {
        let info = variable_key(cx, self.info, "info", "\"communicate_info\"")?;
        Ok(Box::new(Communicated { info }))
    }
}

struct Communicated {
    /// The variable holding what must be communicated.
    info: String,
}

impl Communicated {
    /// The strings to find, or why the variable is not a list of strings.
    fn pieces<'v>(&self, value: &'v Value) -> Result<Vec<&'v str>, ValueProblem> {
        let var = &self.info;
        let Value::Array(items) = value else {
            return Err(ValueProblem(format!(
                "`{var}` must be a list of strings, but it is {}",
                json_kind(value)
            )));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_str().ok_or_else(|| {
                    let kind = json_kind(item);
                    ValueProblem(format!("`{var}[{i}]` must be a string, but it is {kind}"))
                })
            })
            .collect()
    }
}

impl Rule for Communicated {
    fn variables(&self) -> Vec<(&'static str, &str)> {
        vec![("info", self.info.as_str())]
    }

    fn value_problems(&self, vars: &Map<String, Value>) -> Vec<(&'static str, String)> {
        variable_problems("info", vars, &self.info, |v| self.pieces(v))
    }

    fn reads(&self) -> Reads<'_> {
        Reads::Reply(self)
    }
}

impl ReadsReply for Communicated {
    fn verify(&self, reply: &Reply, vars: &Map<String, Value>) -> (String, Verdict) {
        let pieces = match read_variable(vars, &self.info, |v| self.pieces(v)) {
            Ok(pieces) => pieces,
            Err(why) => return (String::new(), Verdict::fail(why.0)),
        };
        // τ²-bench lowercases the message and drops its commas, and only
        // lowercases the piece: a piece with a comma is never found.
        let mut said: Vec<String> = reply
            .turns()
            .filter(|m| !m.content.is_empty())
            .map(|m| m.content.to_lowercase().replace(',', ""))
            .collect();
        if reply.trajectory.is_empty() && !reply.text.is_empty() {
            said.push(reply.text.to_lowercase().replace(',', ""));
        }
        let missing: Vec<String> = pieces
            .iter()
            .filter(|p| !said.iter().any(|m| m.contains(&p.to_lowercase())))
            .map(|p| format!("«{}»", clip(p, SHOWN)))
            .collect();
        let found = pieces.len() - missing.len();
        let shown = format!("{found} of {} communicated", pieces.len());
        if missing.is_empty() {
            return (shown, Verdict::pass());
        }
        let why = format!("the agent never said {}", missing.join(", "));
        (shown, Verdict::failed(FailureKind::NotCommunicated, why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Role;
    use crate::prompt::Message;
    use serde_json::json;

    fn check(info: Value, trajectory: &[Message], text: &str) -> Verdict {
        let vars = json!({ "info": info });
        let reply = Reply {
            trajectory,
            ..Reply::text(text)
        };
        let rule = Communicated {
            info: "info".into(),
        };
        ReadsReply::verify(&rule, &reply, vars.as_object().unwrap()).1
    }

    #[test]
    fn finds_each_piece_in_the_agents_messages_as_tau2_does() {
        let call = super::super::shared::call("get_order_details", json!({}));
        let steps = [
            Message::assistant("Let me look: order total $1,939.05.", vec![call.clone()]),
            Message::tool_result(&call, "{\"total\": 829.43}".to_owned()),
            Message::text(Role::User, "It is Polyester, I think."),
            Message::assistant("The shirts are COTTON.", vec![]),
        ];
        let cases: [(Value, Option<FailureKind>, &str); 6] = [
            (json!(["1939.05", "cotton"]), None, ""),
            (json!([]), None, ""),
            // The tool result and the user's words are not the agent's.
            (
                json!(["829.43", "polyester"]),
                Some(FailureKind::NotCommunicated),
                "never said «829.43», «polyester»",
            ),
            // A piece with a comma cannot match a message without commas.
            (
                json!(["1,939.05"]),
                Some(FailureKind::NotCommunicated),
                "«1,939.05»",
            ),
            (
                json!("cotton"),
                Some(FailureKind::WrongValue),
                "must be a list of strings, but it is a string",
            ),
            (
                json!([5]),
                Some(FailureKind::WrongValue),
                "`info[0]` must be a string, but it is a number",
            ),
        ];
        for (info, failure, detail) in cases {
            let verdict = check(info.clone(), &steps, "");
            assert_eq!(verdict.failure, failure, "{info}: {}", verdict.detail);
            assert!(
                verdict.detail.contains(detail),
                "{info}: {}",
                verdict.detail
            );
        }
        // A reply of text alone is the agent's one message.
        assert!(check(json!(["4 Days"]), &[], "In 4 days.").passed);
    }
}
