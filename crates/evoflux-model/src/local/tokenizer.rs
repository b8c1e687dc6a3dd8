//! The tokenizer, rebuilt from the GGUF metadata alone (no file download).
//!
//! A GGUF stores the vocabulary, merges and token types of a byte-level BPE
//! (`tokenizer.ggml.model = "gpt2"`) but not its pre-tokenizer, which is
//! named by `tokenizer.ggml.pre` and has to be reconstructed. Getting that
//! pipeline wrong does not fail: it silently produces different ids than the
//! model was trained on. For SmolLM (`pre = "smollm"`) the right pipeline is
//! digits split one by one, then byte-level splitting with the GPT-2 pattern
//! and **no** prefix space; control tokens (type 3) are specials that plain
//! text never produces. The id table test in `tests/` pins this down.
//!
//! Content is encoded with special-token matching off: a user who types
//! `<|im_end|>` gets the characters, not the control token, so a message
//! cannot forge chat markup. Markup is inserted by id (see
//! [`super::chat_template`]).

use std::collections::HashMap;

use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

use super::LocalError;
use super::chat_template::{IM_END, IM_START, Part};
use super::gguf::GgufFile;

/// GGUF token types (llama.cpp's `llama_token_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Normal,
    Unknown,
    /// Chat markup and other specials: never produced by text, stop a turn.
    Control,
    /// Added by the model author; matched whole in text.
    UserDefined,
    Unused,
    /// A raw byte token (`<0x0A>`), used by SentencePiece vocabularies.
    Byte,
}

impl TokenKind {
    fn from_gguf(value: i64) -> TokenKind {
        match value {
            2 => TokenKind::Unknown,
            3 => TokenKind::Control,
            4 => TokenKind::UserDefined,
            5 => TokenKind::Unused,
            6 => TokenKind::Byte,
            // 1 is normal; 0 (undefined) and anything newer count as normal.
            _ => TokenKind::Normal,
        }
    }
}

/// How text is split before BPE, from `tokenizer.ggml.pre`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreTokenizer {
    /// SmolLM: every digit alone, then the GPT-2 pattern.
    Smollm,
    /// The GPT-2 pattern (also the fallback for an absent or unknown name).
    Gpt2,
    /// Llama 3 and its relatives: digits in groups of up to three.
    Llama3,
}

/// Llama 3's split pattern (case-insensitive contractions, letters with one
/// leading non-letter, 1-3 digits, punctuation runs, newlines, spaces).
const LLAMA3_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

impl PreTokenizer {
    pub fn from_gguf(name: Option<&str>) -> PreTokenizer {
        match name {
            Some("smollm") => PreTokenizer::Smollm,
            Some("llama3" | "llama-v3" | "llama-bpe" | "smaug-bpe" | "falcon3" | "dbrx") => {
                PreTokenizer::Llama3
            }
            Some(_) | None => PreTokenizer::Gpt2,
        }
    }

    fn build(self) -> Result<PreTokenizerWrapper, String> {
        Ok(match self {
            PreTokenizer::Smollm => PreTokenizerWrapper::Sequence(Sequence::new(vec![
                PreTokenizerWrapper::Digits(Digits::new(true)),
                PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, false, true)),
            ])),
            PreTokenizer::Gpt2 => {
                PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, false, true))
            }
            PreTokenizer::Llama3 => {
                let split = Split::new(
                    SplitPattern::Regex(LLAMA3_PATTERN.to_owned()),
                    SplitDelimiterBehavior::Isolated,
                    false,
                )
                .map_err(|e| e.to_string())?;
                PreTokenizerWrapper::Sequence(Sequence::new(vec![
                    PreTokenizerWrapper::Split(split),
                    PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, false, false)),
                ]))
            }
        })
    }
}

/// The vocabulary and encoder of one model.
#[derive(Debug)]
pub struct GgufTokenizer {
    tokenizer: Tokenizer,
    /// The bytes each token stands for; control tokens keep their text.
    bytes: Vec<Vec<u8>>,
    kinds: Vec<TokenKind>,
    /// Token text to id, for markup lookups by the chat template.
    ids: HashMap<String, u32>,
    pub eos: u32,
    pub bos: Option<u32>,
    pub pre: PreTokenizer,
}

impl GgufTokenizer {
    pub fn from_gguf(model: &GgufFile) -> Result<GgufTokenizer, LocalError> {
        match model.value("tokenizer.ggml.model") {
            Some(candle_core::quantized::gguf_file::Value::String(s)) if s == "gpt2" => {}
            Some(candle_core::quantized::gguf_file::Value::String(s)) => {
                return Err(LocalError::TokenizerUnsupported {
                    path: model.path.clone(),
                    tokenizer: s.clone(),
                });
            }
            Some(_) | None => {
                return Err(LocalError::TokenizerUnsupported {
                    path: model.path.clone(),
                    tokenizer: "(none declared)".to_owned(),
                });
            }
        }
        let tokens = model.strings("tokenizer.ggml.tokens")?;
        let merges = model.strings("tokenizer.ggml.merges")?;
        let types = model.integers("tokenizer.ggml.token_type")?;
        let kinds: Vec<TokenKind> = match types {
            Some(t) if t.len() == tokens.len() => t.into_iter().map(TokenKind::from_gguf).collect(),
            Some(_) => {
                return Err(model.invalid("token_type and tokens differ in length"));
            }
            None => vec![TokenKind::Normal; tokens.len()],
        };
        let vocab_size = u32::try_from(tokens.len())
            .map_err(|_| model.invalid("the vocabulary is too large"))?;
        let id_of = |key: &str| {
            model
                .integer(key)
                .and_then(|v| u32::try_from(v).ok())
                .filter(|v| *v < vocab_size)
        };
        let eos = id_of("tokenizer.ggml.eos_token_id")
            .ok_or_else(|| model.invalid("tokenizer.ggml.eos_token_id is missing"))?;
        let bos = id_of("tokenizer.ggml.bos_token_id");
        let pre_name = match model.value("tokenizer.ggml.pre") {
            Some(candle_core::quantized::gguf_file::Value::String(s)) => Some(s.as_str()),
            Some(_) | None => None,
        };
        let pre = PreTokenizer::from_gguf(pre_name);

        let ids: HashMap<String, u32> = tokens
            .iter()
            .zip(0u32..)
            .map(|(t, i)| ((*t).to_owned(), i))
            .collect();
        let mut pairs = Vec::with_capacity(merges.len());
        for m in &merges {
            let (a, b) = m
                .split_once(' ')
                .ok_or_else(|| model.invalid(format!("merge `{m}` is not two tokens")))?;
            pairs.push((a.to_owned(), b.to_owned()));
        }
        let bpe = BPE::builder()
            .vocab_and_merges(
                ids.iter().map(|(k, v)| (k.clone(), *v)).collect::<Vocab>(),
                pairs,
            )
            .build()
            .map_err(|e| model.invalid(format!("the BPE model does not build: {e}")))?;
        let mut tokenizer = Tokenizer::new(bpe);
        tokenizer.with_pre_tokenizer(Some(
            pre.build()
                .map_err(|e| model.invalid(format!("pre-tokenizer: {e}")))?,
        ));
        tokenizer.with_decoder(Some(ByteLevelDecoder::default()));
        let specials: Vec<AddedToken> = tokens
            .iter()
            .zip(&kinds)
            .filter(|(_, k)| **k == TokenKind::Control)
            .map(|(t, _)| AddedToken::from(*t, true).normalized(false))
            .collect();
        tokenizer
            .add_special_tokens(specials)
            .map_err(|e| model.invalid(format!("special tokens: {e}")))?;
        let user: Vec<AddedToken> = tokens
            .iter()
            .zip(&kinds)
            .filter(|(_, k)| **k == TokenKind::UserDefined)
            .map(|(t, _)| AddedToken::from(*t, false).normalized(false))
            .collect();
        tokenizer
            .add_tokens(user)
            .map_err(|e| model.invalid(format!("added tokens: {e}")))?;
        tokenizer.set_encode_special_tokens(true);

        let table = ByteTable::new();
        let bytes = tokens
            .iter()
            .zip(&kinds)
            .map(|(t, k)| match k {
                TokenKind::Normal | TokenKind::Unknown => table.decode(t),
                TokenKind::Control | TokenKind::Unused | TokenKind::UserDefined => {
                    t.as_bytes().to_vec()
                }
                TokenKind::Byte => byte_token(t).map_or_else(|| t.as_bytes().to_vec(), |b| vec![b]),
            })
            .collect();
        Ok(GgufTokenizer {
            tokenizer,
            bytes,
            kinds,
            ids,
            eos,
            bos,
            pre,
        })
    }

    pub fn vocab_size(&self) -> usize {
        self.bytes.len()
    }

    /// Token ids of plain text; markup-looking text stays text.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        if text.is_empty() {
            return Ok(Vec::new());
        }
        self.tokenizer
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| e.to_string())
    }

    /// Token ids of a rendered prompt. Markup goes in by id; a vocabulary
    /// without ChatML tokens gets the markup spelled as text instead.
    pub fn encode_parts(&self, parts: &[Part]) -> Result<Vec<u32>, String> {
        let mut ids = Vec::new();
        for p in parts {
            let (markup, spelled) = match p {
                Part::Start => (self.token_id(IM_START), IM_START),
                Part::End => (self.token_id(IM_END), IM_END),
                Part::Text(t) => (None, t.as_str()),
            };
            match markup {
                Some(id) => ids.push(id),
                None => ids.extend(self.encode(spelled)?),
            }
        }
        Ok(ids)
    }

    /// The id of a vocabulary entry spelled exactly `text` (chat markup).
    pub fn token_id(&self, text: &str) -> Option<u32> {
        self.ids.get(text).copied()
    }

    pub fn kind(&self, id: u32) -> Option<TokenKind> {
        self.kinds.get(usize::try_from(id).ok()?).copied()
    }

    /// Whether generating `id` ends the turn: end of sequence or any
    /// control token (a model that starts new markup has finished).
    pub fn ends_turn(&self, id: u32) -> bool {
        id == self.eos || self.kind(id) == Some(TokenKind::Control)
    }

    /// The bytes `id` stands for in generated text (empty for control).
    pub fn text_bytes(&self, id: u32) -> &[u8] {
        match self.kind(id) {
            Some(TokenKind::Control | TokenKind::Unused) | None => &[],
            Some(
                TokenKind::Normal | TokenKind::Unknown | TokenKind::UserDefined | TokenKind::Byte,
            ) => usize::try_from(id)
                .ok()
                .and_then(|i| self.bytes.get(i))
                .map_or(&[], Vec::as_slice),
        }
    }

    /// Every token's bytes, in the form the constraint engine wants:
    /// specials prefixed with its 0xFF marker so text never matches them.
    pub fn trie_words(&self) -> Vec<Vec<u8>> {
        self.bytes
            .iter()
            .zip(&self.kinds)
            .map(|(b, k)| match k {
                TokenKind::Control | TokenKind::Unused => {
                    let mut w = Vec::with_capacity(b.len() + 1);
                    w.push(0xFF);
                    w.extend_from_slice(b);
                    w
                }
                TokenKind::Normal
                | TokenKind::Unknown
                | TokenKind::UserDefined
                | TokenKind::Byte => b.clone(),
            })
            .collect()
    }
}

/// `<0x0A>` → 0x0A.
fn byte_token(t: &str) -> Option<u8> {
    let hex = t.strip_prefix("<0x")?.strip_suffix('>')?;
    u8::from_str_radix(hex, 16).ok()
}

/// GPT-2's reversible byte-to-character alphabet: printable Latin-1 bytes
/// stand for themselves; the other 68 bytes are shifted to U+0100 upwards
/// in byte order, so every byte has a visible, non-space character.
#[derive(Debug)]
pub struct ByteTable {
    to_byte: HashMap<char, u8>,
}

impl ByteTable {
    pub fn new() -> ByteTable {
        let mut to_byte = HashMap::with_capacity(256);
        let mut shifted = 0u32;
        for b in 0u8..=255 {
            let visible = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
            let c = if visible {
                char::from(b)
            } else {
                let c = char::from_u32(256 + shifted).unwrap_or(char::REPLACEMENT_CHARACTER);
                shifted += 1;
                c
            };
            to_byte.insert(c, b);
        }
        ByteTable { to_byte }
    }

    /// The bytes a vocabulary entry spells. A character outside the
    /// alphabet (a mislabelled token) keeps its UTF-8 bytes.
    pub fn decode(&self, token: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(token.len());
        for c in token.chars() {
            match self.to_byte.get(&c) {
                Some(b) => out.push(*b),
                None => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        out
    }
}

impl Default for ByteTable {
    fn default() -> Self {
        ByteTable::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_table_is_gpt2s_alphabet() {
        let t = ByteTable::new();
        assert_eq!(t.decode("Ġhello"), b" hello");
        assert_eq!(t.decode("Ċ"), b"\n");
        assert_eq!(t.decode("ĉ"), b"\t");
        assert_eq!(t.decode("Ā"), [0u8]);
        // 0xAD (soft hyphen) is the last shifted byte: U+0143.
        assert_eq!(t.decode("Ń"), [0xADu8]);
        assert_eq!(t.decode("Ã©"), "é".as_bytes());
        assert_eq!(t.to_byte.len(), 256);
    }

    #[test]
    fn pre_tokenizer_names() {
        assert_eq!(
            PreTokenizer::from_gguf(Some("smollm")),
            PreTokenizer::Smollm
        );
        assert_eq!(
            PreTokenizer::from_gguf(Some("llama-bpe")),
            PreTokenizer::Llama3
        );
        assert_eq!(PreTokenizer::from_gguf(None), PreTokenizer::Gpt2);
        assert!(PreTokenizer::Llama3.build().is_ok());
    }

    #[test]
    fn byte_tokens_parse() {
        assert_eq!(byte_token("<0x0A>"), Some(10));
        assert_eq!(byte_token("<0xZZ>"), None);
        assert_eq!(byte_token("a"), None);
    }
}
