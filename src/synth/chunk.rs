//! Token chunking with overlap, by the usual synthetic-QA formulas:
//! `max_tokens = max_seq_length - 2 × max_generation_tokens - 128` and
//! `n_chunks = ceil(length / (max_tokens - overlap))`, with a real BPE
//! tokenizer (tiktoken's vocabularies are embedded in the binary, so no
//! download is ever needed).

use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;

/// How documents are cut: the `[chunking]` table of a pipeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChunkConfig {
    /// The generating model's context window, in tokens.
    #[serde(default = "default_max_seq_length")]
    pub max_seq_length: u32,
    /// Tokens the model may generate per request.
    #[serde(default = "default_max_generation_tokens")]
    pub max_generation_tokens: u32,
    /// Tokens shared by consecutive chunks.
    #[serde(default = "default_overlap")]
    pub overlap: u32,
    /// The tiktoken vocabulary: `cl100k_base` or `o200k_base`.
    #[serde(default = "default_tokenizer")]
    pub tokenizer: String,
}

fn default_max_seq_length() -> u32 {
    2048
}
fn default_max_generation_tokens() -> u32 {
    512
}
fn default_overlap() -> u32 {
    64
}
fn default_tokenizer() -> String {
    "cl100k_base".into()
}

impl Default for ChunkConfig {
    fn default() -> Self {
        ChunkConfig {
            max_seq_length: default_max_seq_length(),
            max_generation_tokens: default_max_generation_tokens(),
            overlap: default_overlap(),
            tokenizer: default_tokenizer(),
        }
    }
}

/// Why chunking settings are unusable.
#[derive(Debug, thiserror::Error, PartialEq)]
pub(crate) enum ChunkError {
    /// The context leaves no room for text.
    #[error(
        "max_seq_length {max_seq_length} - 2 × max_generation_tokens {max_generation_tokens} - 128 leaves {max_tokens} tokens per chunk, not more than the overlap {overlap}"
    )]
    NoRoom {
        /// The configured context.
        max_seq_length: u32,
        /// The configured generation limit.
        max_generation_tokens: u32,
        /// What the formula gave.
        max_tokens: i64,
        /// The configured overlap.
        overlap: u32,
    },
    /// The tokenizer name is not one tiktoken embeds.
    #[error("unknown tokenizer `{0}` (use cl100k_base or o200k_base)")]
    Tokenizer(String),
}

impl ChunkConfig {
    /// Tokens per chunk: `max_seq_length - 2 × max_generation_tokens - 128`,
    /// checked to leave room beyond the overlap.
    pub(crate) fn max_tokens(&self) -> Result<usize, ChunkError> {
        let max_tokens =
            i64::from(self.max_seq_length) - 2 * i64::from(self.max_generation_tokens) - 128;
        if max_tokens <= i64::from(self.overlap) {
            return Err(ChunkError::NoRoom {
                max_seq_length: self.max_seq_length,
                max_generation_tokens: self.max_generation_tokens,
                max_tokens,
                overlap: self.overlap,
            });
        }
        Ok(max_tokens as usize)
    }

    /// The tokenizer, checked by name.
    pub(crate) fn tokenizer(&self) -> Result<&'static CoreBPE, ChunkError> {
        match self.tokenizer.as_str() {
            "cl100k_base" => Ok(tiktoken_rs::cl100k_base_singleton()),
            "o200k_base" => Ok(tiktoken_rs::o200k_base_singleton()),
            other => Err(ChunkError::Tokenizer(other.to_owned())),
        }
    }
}

/// `ceil(length / (max_tokens - overlap))`: how many chunks a text of `length` tokens needs.
pub(crate) fn n_chunks(length: usize, max_tokens: usize, overlap: usize) -> usize {
    length.div_ceil(max_tokens - overlap)
}

/// Token ranges `[start, end)` of the chunks: `n_chunks` starts spread evenly over
/// `0..=length - overlap`, each chunk reaching `overlap` tokens into the next
/// start, so every chunk holds at most `max_tokens` and neighbours share `overlap`.
pub(crate) fn boundaries(length: usize, max_tokens: usize, overlap: usize) -> Vec<(usize, usize)> {
    let n = n_chunks(length, max_tokens, overlap);
    let span = length.saturating_sub(overlap);
    (0..n)
        .map(|i| {
            let start = i * span / n;
            let end = ((i + 1) * span / n + overlap).min(length);
            (start, end)
        })
        .collect()
}

/// One chunk of a document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Chunk {
    /// Position in the document, from 0.
    pub index: usize,
    /// The chunk's text.
    pub text: String,
    /// Byte range in the document's text.
    pub bytes: (usize, usize),
    /// Token range in the document's tokens.
    pub tokens: (usize, usize),
}

/// Cuts `text` into chunks of at most `max_tokens` tokens overlapping by `overlap`.
pub(crate) fn chunk_text(
    text: &str,
    bpe: &CoreBPE,
    max_tokens: usize,
    overlap: usize,
) -> Vec<Chunk> {
    let tokens = bpe.encode_ordinary(text);
    // Byte offset where each token starts: BPE without special tokens is lossless,
    // so the tokens' bytes laid end to end are the text's bytes.
    let mut offsets = Vec::with_capacity(tokens.len() + 1);
    let mut at = 0;
    for t in &tokens {
        offsets.push(at);
        at += bpe.decode_bytes(&[*t]).map_or(0, |b| b.len());
    }
    offsets.push(at.min(text.len()));
    boundaries(tokens.len(), max_tokens, overlap)
        .into_iter()
        .enumerate()
        .map(|(index, (start, end))| {
            // A token may end inside a multi-byte character (Cyrillic, CJK): widen to whole characters.
            let mut from = offsets[start].min(text.len());
            while !text.is_char_boundary(from) {
                from -= 1;
            }
            let mut to = offsets[end].min(text.len());
            while !text.is_char_boundary(to) {
                to += 1;
            }
            Chunk {
                index,
                text: text[from..to].to_owned(),
                bytes: (from, to),
                tokens: (start, end),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_formulas_with_numbers() {
        let config = ChunkConfig::default();
        // 2048 - 2 × 512 - 128 = 896 tokens per chunk.
        assert_eq!(config.max_tokens(), Ok(896));
        // ceil(2000 / (896 - 64)) = ceil(2.40) = 3; ceil(832 / 832) = 1; ceil(833 / 832) = 2.
        assert_eq!(n_chunks(2000, 896, 64), 3);
        assert_eq!(n_chunks(832, 896, 64), 1);
        assert_eq!(n_chunks(833, 896, 64), 2);
        assert_eq!(n_chunks(0, 896, 64), 0);
        // Starts at i × 1936 / 3; each end reaches 64 tokens past the next start.
        assert_eq!(
            boundaries(2000, 896, 64),
            vec![(0, 709), (645, 1354), (1290, 2000)]
        );
        assert_eq!(boundaries(10, 896, 64), vec![(0, 10)]);
        let config = ChunkConfig {
            max_seq_length: 4096,
            max_generation_tokens: 1024,
            overlap: 100,
            ..ChunkConfig::default()
        };
        assert_eq!(config.max_tokens(), Ok(4096 - 2048 - 128));
    }

    #[test]
    fn every_chunk_fits_and_neighbours_overlap() {
        for length in [1, 63, 64, 65, 500, 832, 833, 5000, 12345] {
            let chunks = boundaries(length, 896, 64);
            assert_eq!(chunks.len(), n_chunks(length, 896, 64));
            assert_eq!(chunks[0].0, 0);
            assert_eq!(chunks.last().unwrap().1, length);
            for (s, e) in &chunks {
                assert!(e - s <= 896, "{length}: {s}..{e}");
            }
            for w in chunks.windows(2) {
                assert!(w[0].1 >= w[1].0 + 64.min(length), "{length}: {w:?}");
            }
        }
    }

    #[test]
    fn settings_without_room_are_refused() {
        let config = ChunkConfig {
            max_seq_length: 1200,
            ..ChunkConfig::default()
        };
        assert!(matches!(
            config.max_tokens(),
            Err(ChunkError::NoRoom { max_tokens: 48, .. })
        ));
        let config = ChunkConfig {
            tokenizer: "gpt2".into(),
            ..ChunkConfig::default()
        };
        assert!(config.tokenizer().is_err());
    }

    #[test]
    fn chunks_cover_the_text_on_character_boundaries() {
        let bpe = ChunkConfig::default().tokenizer().unwrap();
        let text = "Съешь же ещё этих мягких французских булок, да выпей чаю. ".repeat(40)
            + "The quick brown fox jumps over the lazy dog. "
                .repeat(40)
                .as_str();
        let chunks = chunk_text(&text, bpe, 200, 20);
        let length = bpe.encode_ordinary(&text).len();
        assert_eq!(chunks.len(), n_chunks(length, 200, 20));
        assert_eq!(chunks[0].bytes.0, 0);
        assert_eq!(chunks.last().unwrap().bytes.1, text.len());
        for c in &chunks {
            assert_eq!(&text[c.bytes.0..c.bytes.1], c.text);
            assert!(bpe.encode_ordinary(&c.text).len() <= 200 + 2);
        }
        for w in chunks.windows(2) {
            assert!(w[0].bytes.1 > w[1].bytes.0, "neighbours overlap");
        }
    }
}
