//! A request's sampling settings on the wire: every wire sends the same
//! few (temperature, the generation limit, `top_p`, the seed, the stop
//! sequences), each under its own names, and some not at all.

use serde_json::{Map, Value, json};

use super::ChatRequest;

/// How a wire names a request's sampling settings ([`ChatRequest::sampling`]);
/// a setting it has no name for is not sent.
pub(crate) struct SamplingNames {
    /// The generation limit.
    pub max_tokens: &'static str,
    /// Nucleus sampling.
    pub top_p: &'static str,
    /// The sampling seed.
    pub seed: Option<&'static str>,
    /// The stop sequences.
    pub stop: Option<&'static str>,
}

/// The names of the OpenAI chat wire, which programs run as models read too.
pub(crate) const OPENAI_SAMPLING: SamplingNames = SamplingNames {
    max_tokens: "max_tokens",
    top_p: "top_p",
    seed: Some("seed"),
    stop: Some("stop"),
};

impl ChatRequest {
    /// The sampling settings of the request as a wire names them: the
    /// temperature and the generation limit always, `top_p`, the seed and the
    /// stop sequences when set and the wire takes them.
    pub(crate) fn sampling(&self, names: &SamplingNames) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("temperature".into(), json!(self.temperature));
        map.insert(names.max_tokens.into(), json!(self.max_tokens));
        if let Some(top_p) = self.top_p {
            map.insert(names.top_p.into(), json!(top_p));
        }
        if let (Some(name), Some(seed)) = (names.seed, self.seed) {
            map.insert(name.into(), json!(seed));
        }
        if let (Some(name), false) = (names.stop, self.stop.is_empty()) {
            map.insert(name.into(), json!(self.stop));
        }
        map
    }
}
