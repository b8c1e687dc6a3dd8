//! The loaded model and its token loop (blocking; run off the async runtime).
//!
//! The engine keeps the KV cache of the last sequence it ran. An agent
//! conversation grows by appending, so the next prompt usually starts with
//! every token already in the cache and only the new suffix is prefilled.
//! When it does not (an edited history, a compacted context), the cache is
//! dropped and the whole prompt is prefilled again, in chunks so the
//! attention scratch stays small.

use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use candle_core::quantized::gguf_file::Content;
use candle_core::{DType, Device, Tensor};
use candle_transformers::models::quantized_llama::{MAX_SEQ_LEN, ModelWeights};
use rand::SeedableRng;
use rand::distr::Distribution;
use rand::rngs::StdRng;

use super::LocalError;
use super::chat_template::Part;
use super::constrain::{Constrainer, Constraint, ModelTokEnv};
use super::gguf::{self, Architecture};
use super::requantize;
use super::tokenizer::GgufTokenizer;

/// Prompt tokens per forward pass while prefilling.
const PREFILL_CHUNK: usize = 256;

/// The most KV cache memory a context may need; the context is capped so
/// a long-context GGUF cannot exhaust a small machine.
const KV_BUDGET_BYTES: u64 = 1 << 30;

/// Used when the file declares no training context.
const FALLBACK_CONTEXT: u64 = 2048;

/// What a load did, for the caller to report.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadReport {
    pub path: PathBuf,
    pub architecture: Architecture,
    /// `original`, `cached-q8_0` or `converted-q8_0`.
    pub weights: &'static str,
    /// The converted file, when one is used.
    pub converted: Option<PathBuf>,
    pub context_window: u64,
    pub vocab_size: usize,
    pub load_time: Duration,
}

/// How the next token is picked.
#[derive(Debug)]
pub enum Sampler {
    /// The most likely token (ties go to the lowest id): reproducible.
    Greedy,
    /// Sampling from the tempered distribution with a seeded generator.
    Temperature { temperature: f32, rng: Box<StdRng> },
}

impl Sampler {
    pub fn new(temperature: Option<f32>, seed: Option<u64>) -> Sampler {
        match temperature {
            Some(t) if t > 0.0 && t.is_finite() => Sampler::Temperature {
                temperature: t,
                rng: Box::new(match seed {
                    Some(s) => StdRng::seed_from_u64(s),
                    None => StdRng::from_os_rng(),
                }),
            },
            Some(_) | None => Sampler::Greedy,
        }
    }

    /// Picks among finite logits; `None` when every token is masked out.
    pub fn pick(&mut self, logits: &[f32]) -> Option<u32> {
        let best = logits
            .iter()
            .enumerate()
            .filter(|(_, l)| l.is_finite())
            .fold(None::<(usize, f32)>, |acc, (i, &l)| match acc {
                Some((_, b)) if b >= l => acc,
                _ => Some((i, l)),
            })?;
        match self {
            Sampler::Greedy => u32::try_from(best.0).ok(),
            Sampler::Temperature { temperature, rng } => {
                let weights: Vec<f64> = logits
                    .iter()
                    .map(|&l| {
                        if l.is_finite() {
                            f64::from((l - best.1) / *temperature).exp()
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let dist = rand::distr::weighted::WeightedIndex::new(&weights).ok()?;
                u32::try_from(dist.sample(rng.as_mut())).ok()
            }
        }
    }
}

/// Why a generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// The model ended its turn (or the grammar admits nothing more).
    EndOfTurn,
    MaxTokens,
    /// The receiver went away.
    Cancelled,
}

/// Figures of one generation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GenerationStats {
    pub finish: Finish,
    pub prompt_tokens: usize,
    /// Prompt tokens found in the KV cache and not computed again.
    pub reused_tokens: usize,
    pub generated_tokens: usize,
    pub prefill_time: Duration,
    pub decode_time: Duration,
}

/// A loaded model.
pub struct Engine {
    weights: ModelWeights,
    tokenizer: Arc<GgufTokenizer>,
    constrainer: Option<Constrainer>,
    /// The tokens whose keys and values are in the cache, in order.
    cached: Vec<u32>,
    pub context_window: u64,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("context_window", &self.context_window)
            .field("cached", &self.cached.len())
            .finish_non_exhaustive()
    }
}

/// Loads `path`, converting slow quantizations through `cache_dir`.
/// `context_cap` is the configured context window, if any.
pub fn load(
    path: &Path,
    cache_dir: Option<&Path>,
    context_cap: Option<u64>,
) -> Result<(Engine, LoadReport), LocalError> {
    let started = Instant::now();
    let (model, mut reader) = gguf::open(path)?;
    let tokenizer = Arc::new(GgufTokenizer::from_gguf(&model)?);
    let context_window = context_window(
        model.context_length(),
        model.kv_bytes_per_token(),
        context_cap,
    );
    let source = requantize::prepare(&model, &mut reader, cache_dir)?;
    let device = Device::Cpu;
    let weights = match source.path() {
        None => weights_from(model.content, &mut reader, &device, path)?,
        Some(converted) => {
            let (conv, mut conv_reader) = gguf::open(converted)?;
            weights_from(conv.content, &mut conv_reader, &device, path)?
        }
    };
    let report = LoadReport {
        path: path.to_path_buf(),
        architecture: model.architecture,
        weights: source.describe(),
        converted: source.path().map(Path::to_path_buf),
        context_window,
        vocab_size: tokenizer.vocab_size(),
        load_time: started.elapsed(),
    };
    let engine = Engine {
        weights,
        tokenizer,
        constrainer: None,
        cached: Vec::new(),
        context_window,
    };
    Ok((engine, report))
}

fn weights_from<R: Read + Seek>(
    content: Content,
    reader: &mut R,
    device: &Device,
    path: &Path,
) -> Result<ModelWeights, LocalError> {
    ModelWeights::from_gguf(content, reader, device).map_err(|e| LocalError::Invalid {
        path: path.to_path_buf(),
        detail: format!("the weights do not load: {e}"),
    })
}

/// The usable context: the file's training context, capped by the rotary
/// table candle precomputes, by the KV memory budget and by configuration.
pub fn context_window(declared: Option<u64>, kv_per_token: Option<u64>, cap: Option<u64>) -> u64 {
    let mut n = declared.unwrap_or(FALLBACK_CONTEXT);
    n = n.min(MAX_SEQ_LEN as u64);
    if let Some(per) = kv_per_token.filter(|p| *p > 0) {
        n = n.min(KV_BUDGET_BYTES / per);
    }
    if let Some(c) = cap {
        n = n.min(c);
    }
    n.max(1)
}

impl Engine {
    pub fn tokenizer(&self) -> &Arc<GgufTokenizer> {
        &self.tokenizer
    }

    /// Token ids of a rendered prompt (see [`GgufTokenizer::encode_parts`]).
    pub fn encode_prompt(&self, parts: &[Part]) -> Result<Vec<u32>, String> {
        self.tokenizer.encode_parts(parts)
    }

    /// The constraint factory, built on first use (it indexes the vocabulary).
    pub fn constrainer(&mut self) -> Result<&Constrainer, String> {
        if self.constrainer.is_none() {
            let env = ModelTokEnv::new(self.tokenizer.clone())?;
            self.constrainer = Some(Constrainer::new(Arc::new(env))?);
        }
        self.constrainer
            .as_ref()
            .ok_or_else(|| "constraint engine unavailable".to_owned())
    }

    fn forward(&mut self, tokens: &[u32], position: usize) -> candle_core::Result<Vec<f32>> {
        let input = Tensor::new(tokens, &Device::Cpu)?.unsqueeze(0)?;
        let logits = self.weights.forward(&input, position)?;
        logits.squeeze(0)?.to_dtype(DType::F32)?.to_vec1::<f32>()
    }

    /// Feeds `prompt`, reusing the cached prefix, and returns the logits
    /// for the next token plus how many prompt tokens were reused.
    fn prefill(&mut self, prompt: &[u32]) -> candle_core::Result<(Vec<f32>, usize)> {
        let reuse = if self.cached.len() < prompt.len() && prompt.starts_with(&self.cached) {
            self.cached.len()
        } else {
            self.weights.clear_kv_cache();
            self.cached.clear();
            0
        };
        let mut logits = Vec::new();
        for chunk in prompt[reuse..].chunks(PREFILL_CHUNK) {
            let position = self.cached.len();
            logits = self.forward(chunk, position)?;
            self.cached.extend_from_slice(chunk);
        }
        Ok((logits, reuse))
    }

    /// Generates up to `max_new` tokens after `prompt`. `emit` gets each
    /// token's text bytes and returns false to cancel. Under a constraint
    /// only tokens it allows are picked.
    pub fn generate(
        &mut self,
        prompt: &[u32],
        max_new: usize,
        mut constraint: Option<&mut Constraint>,
        sampler: &mut Sampler,
        emit: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<GenerationStats, String> {
        let result = self.generate_inner(prompt, max_new, &mut constraint, sampler, emit);
        if result.is_err() {
            // The cache may hold a half-fed sequence; start clean next time.
            self.weights.clear_kv_cache();
            self.cached.clear();
        }
        result
    }

    fn generate_inner(
        &mut self,
        prompt: &[u32],
        max_new: usize,
        constraint: &mut Option<&mut Constraint>,
        sampler: &mut Sampler,
        emit: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<GenerationStats, String> {
        let started = Instant::now();
        let (mut logits, reused) = self.prefill(prompt).map_err(|e| e.to_string())?;
        let prefill_time = started.elapsed();
        let decode_started = Instant::now();
        let mut generated = 0usize;
        let finish = loop {
            if generated >= max_new {
                break Finish::MaxTokens;
            }
            if let Some(c) = constraint.as_deref_mut() {
                let mask = c.allowed()?;
                for (i, l) in logits.iter_mut().enumerate() {
                    let allowed = u32::try_from(i).is_ok_and(|t| mask.is_allowed(t));
                    if !allowed {
                        *l = f32::NEG_INFINITY;
                    }
                }
            }
            let Some(token) = sampler.pick(&logits) else {
                return Err("no token is allowed at this point".to_owned());
            };
            if let Some(c) = constraint.as_deref_mut() {
                c.commit(token)?;
            }
            if self.tokenizer.ends_turn(token) {
                break Finish::EndOfTurn;
            }
            generated += 1;
            if !emit(self.tokenizer.text_bytes(token)) {
                break Finish::Cancelled;
            }
            if constraint.as_deref().is_some_and(Constraint::is_stopped) {
                break Finish::EndOfTurn;
            }
            let position = self.cached.len();
            logits = self
                .forward(&[token], position)
                .map_err(|e| e.to_string())?;
            self.cached.push(token);
        };
        Ok(GenerationStats {
            finish,
            prompt_tokens: prompt.len(),
            reused_tokens: reused,
            generated_tokens: generated,
            prefill_time,
            decode_time: decode_started.elapsed(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_is_capped_by_table_budget_and_config() {
        assert_eq!(context_window(Some(8192), Some(46_080), None), 4096);
        assert_eq!(context_window(Some(8192), Some(46_080), Some(1024)), 1024);
        assert_eq!(context_window(None, None, None), 2048);
        // A huge per-token KV cost is bounded by the memory budget.
        assert_eq!(context_window(Some(4096), Some(1 << 20), None), 1024);
    }

    #[test]
    fn greedy_picks_the_first_best_finite_logit() {
        let mut s = Sampler::new(None, None);
        assert_eq!(s.pick(&[0.5, 2.0, 2.0, f32::NAN]), Some(1));
        assert_eq!(s.pick(&[f32::NEG_INFINITY, -1.0]), Some(1));
        assert_eq!(s.pick(&[f32::NEG_INFINITY]), None);
        assert!(matches!(Sampler::new(Some(0.0), None), Sampler::Greedy));
    }

    #[test]
    fn seeded_sampling_repeats_and_respects_the_mask() {
        let logits = [1.0, 1.0, f32::NEG_INFINITY, 1.0];
        let run = |seed| {
            let mut s = Sampler::new(Some(1.0), Some(seed));
            (0..32)
                .map(|_| s.pick(&logits).unwrap())
                .collect::<Vec<_>>()
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert!(!a.contains(&2));
        assert!(a.iter().collect::<std::collections::HashSet<_>>().len() > 1);
    }
}
