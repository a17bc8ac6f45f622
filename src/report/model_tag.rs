//! Model name, size and quantization read from a model tag, as the RRR CSV
//! reports them: `llama3.1:8b-instruct-q4_K_M` → (`llama3.1`, `8b`, `q4_K_M`),
//! `hf.co/t-tech/T-pro-it-1.0-Q4_K_M-GGUF` → (`T-pro-it-1.0`, `unknown`, `Q4_K_M`).

use std::sync::LazyLock;

use regex::Regex;

/// Shown for a part the tag does not state.
pub(crate) const UNKNOWN: &str = "unknown";

/// The parts of a model tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ModelTag {
    /// The model family and version, without size or quantization.
    pub name: String,
    /// Parameter count as written (`8b`, `135M`, `8x7b`), or [`UNKNOWN`].
    pub size: String,
    /// Quantization as written (`q4_K_M`, `Q8_0`, `fp16`), or [`UNKNOWN`].
    pub quant: String,
}

static QUANT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(?:i?q\d+(?:_[0-9a-z]+)*|bf16|fp16|f16|fp32|f32|fp8|int4|int8|mxfp4|awq|gptq)$",
    )
    .unwrap()
});
static SIZE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^(?:\d+x)?\d+(?:\.\d+)?[bmk]$|^e\d+b$").unwrap());

/// Reads the display name `tag`, taking the size and quantization it does not
/// state from the model id it sends (`smollm2` serving `SmolLM2-135M-Instruct.Q4_1`).
pub(crate) fn parse_with_id(tag: &str, id: Option<&str>) -> ModelTag {
    let mut parsed = parse(tag);
    if let Some(id) = id {
        let from_id = parse(id);
        if parsed.size == UNKNOWN {
            parsed.size = from_id.size;
        }
        if parsed.quant == UNKNOWN {
            parsed.quant = from_id.quant;
        }
    }
    parsed
}

/// Reads `tag`: an optional provider prefix (`ollama:`) and `@url` are ignored.
pub(crate) fn parse(tag: &str) -> ModelTag {
    let tag = tag.split('@').next().unwrap_or(tag);
    let tag = ["ollama:", "openai:", "replay:"]
        .iter()
        .find_map(|p| tag.strip_prefix(p))
        .unwrap_or(tag);
    // Hub references: `hf.co/owner/Repo-GGUF[:quant]`; the repo name carries the parts.
    let tag = match tag
        .strip_prefix("hf.co/")
        .or_else(|| tag.strip_prefix("huggingface.co/"))
    {
        Some(rest) => rest.rsplit_once('/').map_or(rest, |(_, repo)| repo),
        None => tag,
    };
    let (base, version) = match tag.split_once(':') {
        Some((b, v)) => (b, Some(v)),
        None => (tag, None),
    };
    let mut size = None;
    let mut quant = None;
    let mut name_parts = Vec::new();
    // Pieces of the base name; a size or quantization inside it is taken out of the name.
    for piece in pieces(base) {
        if piece.eq_ignore_ascii_case("gguf") {
            continue;
        }
        if quant.is_none() && QUANT.is_match(&piece) {
            quant = Some(piece);
        } else if size.is_none() && SIZE.is_match(&piece) && !name_parts.is_empty() {
            size = Some(piece);
        } else {
            name_parts.push(piece);
        }
    }
    for piece in version.into_iter().flat_map(pieces) {
        if QUANT.is_match(&piece) {
            quant = quant.or(Some(piece));
        } else if SIZE.is_match(&piece) {
            size = size.or(Some(piece));
        }
    }
    let name = if name_parts.is_empty() {
        base.to_owned()
    } else {
        name_parts.join("-")
    };
    ModelTag {
        name,
        size: size.unwrap_or_else(|| UNKNOWN.to_owned()),
        quant: quant.unwrap_or_else(|| UNKNOWN.to_owned()),
    }
}

/// `-`/`.gguf`-separated pieces of a name, keeping `q4_K_M` and `1.0` whole.
fn pieces(s: &str) -> Vec<String> {
    let s = s.strip_suffix(".gguf").unwrap_or(s);
    let mut out = Vec::new();
    for piece in s.split('-').filter(|p| !p.is_empty()) {
        // GGUF file names put the quantization after a dot: `Instruct.Q4_1`.
        match piece.rsplit_once('.') {
            Some((head, quant)) if !head.is_empty() && QUANT.is_match(quant) => {
                out.push(head.to_owned());
                out.push(quant.to_owned());
            }
            _ => out.push(piece.to_owned()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_and_quant_from_the_model_id_when_the_name_is_bare() {
        let t = parse_with_id("smollm2", Some("SmolLM2-135M-Instruct.Q4_1"));
        assert_eq!(
            (t.name.as_str(), t.size.as_str(), t.quant.as_str()),
            ("smollm2", "135M", "Q4_1")
        );
        let t = parse_with_id("qwen3:8b-q4_K_M", Some("other-1b-q8_0"));
        assert_eq!((t.size.as_str(), t.quant.as_str()), ("8b", "q4_K_M"));
    }

    const U: &str = UNKNOWN;

    #[test]
    fn tags_split_into_name_size_and_quant() {
        let cases = [
            ("llama3.1:8b-instruct-q4_K_M", "llama3.1", "8b", "q4_K_M"),
            ("qwen3:8b", "qwen3", "8b", U),
            ("ollama:qwen3:8b", "qwen3", "8b", U),
            ("qwen2.5:0.5b-instruct-fp16", "qwen2.5", "0.5b", "fp16"),
            ("gemma3:27b-it-qat", "gemma3", "27b", U),
            (
                "mixtral:8x7b-instruct-v0.1-q5_K_S",
                "mixtral",
                "8x7b",
                "q5_K_S",
            ),
            ("llama3.2", "llama3.2", U, U),
            ("gemma3n:e4b", "gemma3n", "e4b", U),
            ("mistral:7b-instruct-v0.3-q8_0", "mistral", "7b", "q8_0"),
            (
                "deepseek-r1:14b-qwen-distill-q4_K_M",
                "deepseek-r1",
                "14b",
                "q4_K_M",
            ),
            ("phi4-mini:3.8b-q4_K_M", "phi4-mini", "3.8b", "q4_K_M"),
            (
                "hf.co/t-tech/T-pro-it-1.0-Q4_K_M-GGUF",
                "T-pro-it-1.0",
                U,
                "Q4_K_M",
            ),
            (
                "hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q6_K",
                "Llama-3.2-Instruct",
                "3B",
                "Q6_K",
            ),
            (
                "hf.co/IlyaGusev/saiga_yandexgpt_8b_gguf:Q4_K_M",
                "saiga_yandexgpt_8b_gguf",
                U,
                "Q4_K_M",
            ),
            (
                "SmolLM2-135M-Instruct-Q8_0.gguf",
                "SmolLM2-Instruct",
                "135M",
                "Q8_0",
            ),
            (
                "openai:gpt-4o-mini@http://127.0.0.1:8080/v1",
                "gpt-4o-mini",
                U,
                U,
            ),
            ("smollm2", "smollm2", U, U),
            ("gemma-3-270m-it-IQ4_XS", "gemma-3-it", "270m", "IQ4_XS"),
        ];
        for (tag, name, size, quant) in cases {
            let got = parse(tag);
            assert_eq!(
                (got.name.as_str(), got.size.as_str(), got.quant.as_str()),
                (name, size, quant),
                "{tag}"
            );
        }
    }
}
