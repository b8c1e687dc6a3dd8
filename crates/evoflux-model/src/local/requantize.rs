//! Converting slow quantizations to Q8_0 once, and caching the result.
//!
//! candle has SIMD dot products for Q4_0, Q8_0 and the K-quants but only a
//! scalar path for Q4_1, Q5_0 and Q5_1, which is what the embedded SmolLM2
//! file uses. Requantizing those tensors to Q8_0 at load costs well under a
//! second and roughly doubles decode and quintuples prefill speed, at about
//! 1.5x the weight memory. The converted file is written to the cache dir,
//! keyed by the source's identity (path, size, modification time) and the
//! converter version, so the next load reads it directly.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use candle_core::Device;
use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use evoflux_core::hash::sha256_hex;

use super::LocalError;
use super::gguf::{self as gguf_open, GgufFile};

/// Bump when the conversion changes, so stale cache files are not reused.
const CONVERTER_VERSION: &str = "evoflux-q8_0-v1";

/// The target quantization.
const TARGET: GgmlDType = GgmlDType::Q8_0;

/// Whether a tensor of `dtype` is worth converting: true exactly for the
/// quantizations without a fast CPU kernel in candle.
pub const fn needs_conversion(dtype: GgmlDType) -> bool {
    match dtype {
        GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1 => true,
        GgmlDType::F32
        | GgmlDType::F16
        | GgmlDType::BF16
        | GgmlDType::Q4_0
        | GgmlDType::Q8_0
        | GgmlDType::Q8_1
        | GgmlDType::Q2K
        | GgmlDType::Q3K
        | GgmlDType::Q4K
        | GgmlDType::Q5K
        | GgmlDType::Q6K
        | GgmlDType::Q8K => false,
    }
}

/// Where the weights that will be loaded come from.
#[derive(Debug)]
pub enum WeightSource {
    /// The user's file needs no conversion.
    Original,
    /// A converted file that was already in the cache.
    Cached(PathBuf),
    /// Converted now; kept in the cache for next time.
    Converted(PathBuf),
    /// Converted now into a temporary file (no usable cache dir).
    Temporary(tempfile::NamedTempFile),
}

impl WeightSource {
    /// The file to read the weights from, or `None` for the original.
    pub fn path(&self) -> Option<&Path> {
        match self {
            WeightSource::Original => None,
            WeightSource::Cached(p) | WeightSource::Converted(p) => Some(p),
            WeightSource::Temporary(t) => Some(t.path()),
        }
    }

    /// How the weights were obtained, for load reports.
    pub const fn describe(&self) -> &'static str {
        match self {
            WeightSource::Original => "original",
            WeightSource::Cached(_) => "cached-q8_0",
            WeightSource::Converted(_) | WeightSource::Temporary(_) => "converted-q8_0",
        }
    }
}

/// Makes sure fast weights exist for `model`: nothing to do, a cache hit, or
/// a conversion written to `cache_dir` (or a temporary file without one).
pub fn prepare(
    model: &GgufFile,
    reader: &mut BufReader<File>,
    cache_dir: Option<&Path>,
) -> Result<WeightSource, LocalError> {
    let slow = model
        .content
        .tensor_infos
        .values()
        .any(|t| needs_conversion(t.ggml_dtype) && convertible(t.shape.elem_count()));
    if !slow {
        return Ok(WeightSource::Original);
    }
    let cached = cache_dir.and_then(|dir| cache_path(&model.path, dir));
    if let Some(path) = &cached
        && cache_is_usable(path)
    {
        return Ok(WeightSource::Cached(path.clone()));
    }
    match cached {
        Some(path) => {
            let dir = path.parent().unwrap_or_else(|| Path::new("."));
            if std::fs::create_dir_all(dir).is_ok()
                && let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir)
            {
                convert(model, reader, tmp.as_file_mut())?;
                // A concurrent process may have won the race; either file is
                // the same conversion, so the last rename is fine.
                if tmp.persist(&path).is_ok() {
                    return Ok(WeightSource::Converted(path));
                }
            }
            convert_to_temp(model, reader)
        }
        None => convert_to_temp(model, reader),
    }
}

fn convert_to_temp(
    model: &GgufFile,
    reader: &mut BufReader<File>,
) -> Result<WeightSource, LocalError> {
    let mut tmp = tempfile::NamedTempFile::new().map_err(|e| LocalError::Cache {
        detail: format!("cannot create a temporary file for the converted weights: {e}"),
    })?;
    convert(model, reader, tmp.as_file_mut())?;
    Ok(WeightSource::Temporary(tmp))
}

/// Q8_0 blocks hold 32 values; other tensors stay as they are.
fn convertible(elements: usize) -> bool {
    elements.is_multiple_of(TARGET.block_size())
}

/// The cache file for `source`: its name keeps the model's stem readable;
/// the hash covers the canonical path, size, mtime and converter version.
pub fn cache_path(source: &Path, cache_dir: &Path) -> Option<PathBuf> {
    let canonical = source.canonicalize().ok()?;
    let meta = std::fs::metadata(&canonical).ok()?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut identity = Vec::new();
    identity.extend_from_slice(CONVERTER_VERSION.as_bytes());
    identity.push(0);
    identity.extend_from_slice(canonical.as_os_str().as_encoded_bytes());
    identity.push(0);
    identity.extend_from_slice(&meta.len().to_le_bytes());
    identity.extend_from_slice(&mtime.to_le_bytes());
    let key = sha256_hex(&identity);
    let key = key.as_str();
    let stem = canonical
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".to_owned());
    Some(
        cache_dir
            .join("models")
            .join(format!("{stem}.{}.q8_0.gguf", key.get(..16).unwrap_or(key))),
    )
}

/// A cache file is used only when it opens as a GGUF; anything else (a
/// truncated write from a killed process) is converted again.
fn cache_is_usable(path: &Path) -> bool {
    path.is_file() && gguf_open::open(path).is_ok()
}

/// Writes `model` to `out` with every slow tensor requantized to Q8_0.
fn convert(
    model: &GgufFile,
    reader: &mut BufReader<File>,
    out: &mut File,
) -> Result<(), LocalError> {
    let device = Device::Cpu;
    let mut names: Vec<&String> = model.content.tensor_infos.keys().collect();
    names.sort();
    let mut tensors: Vec<(&str, QTensor)> = Vec::with_capacity(names.len());
    for name in names {
        let q = model
            .content
            .tensor(reader, name, &device)
            .map_err(|e| model.invalid(format!("tensor `{name}` does not read: {e}")))?;
        let q = if needs_conversion(q.dtype()) && convertible(q.shape().elem_count()) {
            let full = q
                .dequantize(&device)
                .map_err(|e| model.invalid(format!("tensor `{name}` does not dequantize: {e}")))?;
            QTensor::quantize(&full, TARGET).map_err(|e| LocalError::Cache {
                detail: format!("requantizing `{name}` failed: {e}"),
            })?
        } else {
            q
        };
        tensors.push((name.as_str(), q));
    }
    // The writer aligns tensor data to 32 bytes itself; a different declared
    // alignment from the source would make the reader look in the wrong place.
    let metadata: Vec<(&str, &Value)> = sorted_metadata(model)
        .into_iter()
        .filter(|(k, _)| *k != "general.alignment")
        .collect();
    let refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(n, t)| (*n, t)).collect();
    let mut w = BufWriter::new(out);
    gguf_file::write(&mut w, &metadata, &refs).map_err(|e| LocalError::Cache {
        detail: format!("writing the converted model failed: {e}"),
    })?;
    w.flush().map_err(|e| LocalError::Cache {
        detail: format!("writing the converted model failed: {e}"),
    })?;
    Ok(())
}

fn sorted_metadata(model: &GgufFile) -> Vec<(&str, &Value)> {
    let mut m: Vec<(&str, &Value)> = model
        .content
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    m.sort_by(|a, b| a.0.cmp(b.0));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_scalar_only_quantizations_are_converted() {
        assert!(needs_conversion(GgmlDType::Q4_1));
        assert!(needs_conversion(GgmlDType::Q5_0));
        assert!(!needs_conversion(GgmlDType::Q8_0));
        assert!(!needs_conversion(GgmlDType::Q4K));
        assert!(!needs_conversion(GgmlDType::F32));
    }

    #[test]
    fn cache_key_follows_the_source_file() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("m.gguf");
        std::fs::write(&src, b"GGUF one").unwrap();
        let a = cache_path(&src, Path::new("/cache")).unwrap();
        assert!(a.starts_with("/cache/models"));
        let name = a.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("m.") && name.ends_with(".q8_0.gguf"),
            "{name}"
        );
        std::fs::write(&src, b"GGUF one, longer").unwrap();
        let b = cache_path(&src, Path::new("/cache")).unwrap();
        assert_ne!(a, b, "a changed source must not reuse the old conversion");
        assert_eq!(
            cache_path(&dir.path().join("absent"), Path::new("/c")),
            None
        );
    }
}
