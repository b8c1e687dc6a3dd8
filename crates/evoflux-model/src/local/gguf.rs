//! Opening a GGUF file and reading what the provider needs from its header.
//!
//! The checks run in the order a user can act on them: the file must exist,
//! must be a GGUF file (magic bytes), and must declare an architecture we
//! can run. Only then is the header parsed in full; a header that parses
//! but lacks a tensor or key the model needs is reported as invalid, naming
//! what is missing.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{Content, Value};

use super::LocalError;

/// The four bytes every GGUF file starts with.
const GGUF_MAGIC: [u8; 4] = *b"GGUF";

/// Model architectures this provider can run, as `general.architecture`
/// names them. A closed set: adding one means adding its forward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    /// Llama and the many models that reuse its layout (SmolLM, TinyLlama,
    /// Mistral-style GGUFs exported as `llama`).
    Llama,
}

impl Architecture {
    fn from_name(name: &str) -> Option<Architecture> {
        match name {
            "llama" => Some(Architecture::Llama),
            _ => None,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Architecture::Llama => "llama",
        }
    }

    /// The metadata key prefix of this architecture's hyperparameters.
    const fn key_prefix(self) -> &'static str {
        self.as_str()
    }
}

/// A parsed GGUF header plus where it came from.
#[derive(Debug)]
pub struct GgufFile {
    pub path: PathBuf,
    pub content: Content,
    pub architecture: Architecture,
}

/// Opens `path` and checks, in order: present, GGUF, supported architecture.
pub fn open(path: &Path) -> Result<(GgufFile, BufReader<File>), LocalError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(LocalError::FileMissing {
                path: path.to_path_buf(),
            });
        }
        Err(e) => {
            return Err(LocalError::Unreadable {
                path: path.to_path_buf(),
                detail: e.to_string(),
            });
        }
    };
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(LocalError::NotGguf {
            path: path.to_path_buf(),
            detail: "it is a directory".to_owned(),
        });
    }
    let mut reader = BufReader::new(file);
    let mut magic = [0u8; 4];
    match reader.read_exact(&mut magic) {
        Ok(()) if magic == GGUF_MAGIC => {}
        Ok(()) => {
            return Err(LocalError::NotGguf {
                path: path.to_path_buf(),
                detail: format!("it starts with {magic:02x?}, not the GGUF magic"),
            });
        }
        Err(_) => {
            return Err(LocalError::NotGguf {
                path: path.to_path_buf(),
                detail: "it is shorter than a GGUF header".to_owned(),
            });
        }
    }
    use std::io::Seek;
    reader.rewind().map_err(|e| LocalError::Unreadable {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    let content = Content::read(&mut reader).map_err(|e| LocalError::NotGguf {
        path: path.to_path_buf(),
        detail: format!("its header does not parse: {e}"),
    })?;
    let name = match content.metadata.get("general.architecture") {
        Some(Value::String(s)) => s.clone(),
        Some(_) | None => {
            return Err(LocalError::ArchitectureUnsupported {
                path: path.to_path_buf(),
                architecture: "(none declared)".to_owned(),
            });
        }
    };
    let architecture =
        Architecture::from_name(&name).ok_or_else(|| LocalError::ArchitectureUnsupported {
            path: path.to_path_buf(),
            architecture: name,
        })?;
    Ok((
        GgufFile {
            path: path.to_path_buf(),
            content,
            architecture,
        },
        reader,
    ))
}

impl GgufFile {
    pub fn invalid(&self, detail: impl Into<String>) -> LocalError {
        LocalError::Invalid {
            path: self.path.clone(),
            detail: detail.into(),
        }
    }

    pub fn value(&self, key: &str) -> Option<&Value> {
        self.content.metadata.get(key)
    }

    /// An integer metadata value of any width, as llama.cpp writers vary.
    pub fn integer(&self, key: &str) -> Option<u64> {
        match self.value(key)? {
            Value::U8(v) => Some(u64::from(*v)),
            Value::U16(v) => Some(u64::from(*v)),
            Value::U32(v) => Some(u64::from(*v)),
            Value::U64(v) => Some(*v),
            Value::I8(v) => u64::try_from(*v).ok(),
            Value::I16(v) => u64::try_from(*v).ok(),
            Value::I32(v) => u64::try_from(*v).ok(),
            Value::I64(v) => u64::try_from(*v).ok(),
            Value::F32(_) | Value::F64(_) | Value::Bool(_) | Value::String(_) | Value::Array(_) => {
                None
            }
        }
    }

    /// An architecture hyperparameter such as `llama.context_length`.
    pub fn hyper(&self, name: &str) -> Option<u64> {
        self.integer(&format!("{}.{name}", self.architecture.key_prefix()))
    }

    /// A required array of strings (the vocabulary, the merges).
    pub fn strings(&self, key: &str) -> Result<Vec<&str>, LocalError> {
        let Some(Value::Array(items)) = self.value(key) else {
            return Err(self.invalid(format!("metadata `{key}` is missing or not an array")));
        };
        items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.as_str()),
                _ => Err(self.invalid(format!("metadata `{key}` holds a non-string"))),
            })
            .collect()
    }

    /// An optional array of integers (token types).
    pub fn integers(&self, key: &str) -> Result<Option<Vec<i64>>, LocalError> {
        let Some(value) = self.value(key) else {
            return Ok(None);
        };
        let Value::Array(items) = value else {
            return Err(self.invalid(format!("metadata `{key}` is not an array")));
        };
        items
            .iter()
            .map(|v| match v {
                Value::U8(x) => Ok(i64::from(*x)),
                Value::U16(x) => Ok(i64::from(*x)),
                Value::U32(x) => Ok(i64::from(*x)),
                Value::I8(x) => Ok(i64::from(*x)),
                Value::I16(x) => Ok(i64::from(*x)),
                Value::I32(x) => Ok(i64::from(*x)),
                Value::I64(x) => Ok(*x),
                Value::U64(x) => i64::try_from(*x)
                    .map_err(|_| self.invalid(format!("metadata `{key}` is out of range"))),
                Value::F32(_)
                | Value::F64(_)
                | Value::Bool(_)
                | Value::String(_)
                | Value::Array(_) => {
                    Err(self.invalid(format!("metadata `{key}` holds a non-integer")))
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// The training context length the file declares.
    pub fn context_length(&self) -> Option<u64> {
        self.hyper("context_length")
    }

    /// Bytes of KV cache one token of context costs in f32: every layer
    /// keeps a key and a value row per KV head.
    pub fn kv_bytes_per_token(&self) -> Option<u64> {
        let layers = self.hyper("block_count")?;
        let heads = self.hyper("attention.head_count")?;
        let kv_heads = self.hyper("attention.head_count_kv").unwrap_or(heads);
        let embedding = self.hyper("embedding_length")?;
        let head_dim = embedding.checked_div(heads)?;
        Some(layers * 2 * kv_heads * head_dim * 4)
    }
}
