//! Deterministic lexical ranking of skill metadata by the latest request.
//!
//! Ranking decides only the *order* of the Tier-1 catalog so that relevant
//! cards survive a tight budget. It never filters, never loads anything and
//! produces nothing but an ordering of the names it was given: in
//! particular there is no output a caller could forward to repository
//! search. Two BM25 rankings (identity: name, display name, short
//! description; and description) are fused by reciprocal rank with k = 60.

use std::collections::{BTreeMap, BTreeSet};

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Reciprocal-rank-fusion constant.
pub const RRF_K: f64 = 60.0;
const BM25_K1: f64 = 1.2;
const BM25_B: f64 = 0.75;
/// A description match resting on one short common term is noise.
const MIN_SINGLE_DESCRIPTION_TERM: usize = 7;

const STOPWORDS: [&str; 15] = [
    "and", "for", "from", "into", "the", "this", "use", "when", "with", // English
    "cho", "cua", "mot", "nay", "nhung", "trong", // Vietnamese, unaccented
];

/// Search terms of `text`: compatibility-decomposed, case-folded, accents
/// stripped, split on anything that is not a letter or digit, at least two
/// characters, stopwords dropped, first occurrence kept.
pub fn tokenize(text: &str) -> Vec<String> {
    let folded: String = text
        .nfkd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect();
    let mut seen = BTreeSet::new();
    folded
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| t.chars().count() >= 2 && !STOPWORDS.contains(t))
        .filter(|t| seen.insert((*t).to_owned()))
        .map(str::to_owned)
        .collect()
}

/// The text of one skill that ranking looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankDoc<'a> {
    pub name: &'a str,
    /// Name, display name and short description joined.
    pub identity: String,
    pub description: &'a str,
}

/// Names of `docs` that match `query`, best first. Docs that match nothing
/// are not returned (the caller appends them in its own order: ranking
/// never removes anything from the catalog).
pub fn rank(query: &str, docs: &[RankDoc<'_>]) -> Vec<String> {
    let q: Vec<String> = tokenize(query);
    if q.is_empty() || docs.is_empty() {
        return Vec::new();
    }
    let identity: Vec<Vec<String>> = docs.iter().map(|d| tokenize(&d.identity)).collect();
    let description: Vec<Vec<String>> = docs.iter().map(|d| tokenize(d.description)).collect();
    let by_identity = bm25_order(&q, &identity, docs, false);
    let by_description = bm25_order(&q, &description, docs, true);

    let mut fused: BTreeMap<&str, f64> = BTreeMap::new();
    for order in [&by_identity, &by_description] {
        for (i, idx) in order.iter().enumerate() {
            *fused.entry(docs[*idx].name).or_default() += 1.0 / (RRF_K + (i + 1) as f64);
        }
    }
    let mut out: Vec<(&str, f64)> = fused.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    out.into_iter().map(|(n, _)| n.to_owned()).collect()
}

/// Indexes of docs with a positive BM25 score, best first, ties by name.
fn bm25_order(
    q: &[String],
    fields: &[Vec<String>],
    docs: &[RankDoc<'_>],
    guard: bool,
) -> Vec<usize> {
    let n = fields.len() as f64;
    let avgdl = (fields.iter().map(Vec::len).sum::<usize>() as f64 / n).max(1.0);
    let mut df: BTreeMap<&str, usize> = BTreeMap::new();
    for f in fields {
        for t in f {
            *df.entry(t.as_str()).or_default() += 1;
        }
    }
    let mut scored: Vec<(usize, f64)> = Vec::new();
    for (i, terms) in fields.iter().enumerate() {
        let overlap: Vec<&String> = q.iter().filter(|t| terms.contains(t)).collect();
        if overlap.is_empty() {
            continue;
        }
        if guard && overlap.len() == 1 && overlap[0].chars().count() < MIN_SINGLE_DESCRIPTION_TERM {
            continue;
        }
        let dl = terms.len() as f64;
        let norm = 1.0 + BM25_K1 * (1.0 - BM25_B + BM25_B * dl / avgdl);
        let score: f64 = overlap
            .iter()
            .map(|t| {
                let d = df.get(t.as_str()).copied().unwrap_or(0) as f64;
                let idf = (1.0 + (n - d + 0.5) / (d + 0.5)).ln();
                idf * (BM25_K1 + 1.0) / norm
            })
            .sum();
        scored.push((i, score));
    }
    scored.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| docs[a.0].name.cmp(docs[b.0].name))
    });
    scored.into_iter().map(|(i, _)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc<'a>(name: &'a str, description: &'a str) -> RankDoc<'a> {
        RankDoc {
            name,
            identity: name.replace('-', " "),
            description,
        }
    }

    #[test]
    fn tokenizer_folds_case_accents_and_drops_noise() {
        assert_eq!(
            tokenize("Use the PDF-tool for Résumé_parsing, ﬁle x; with Trong"),
            ["pdf", "tool", "resume", "parsing", "file"]
        );
        assert_eq!(tokenize("Tiếng Việt cho một"), ["tieng", "viet"]);
        assert!(tokenize("a b c").is_empty());
    }

    #[test]
    fn ranking_orders_matches_and_ignores_weak_description_hits() {
        let docs = [
            doc("pdf-tools", "Extract text and tables from PDF documents."),
            doc(
                "coding-review",
                "Review a pull request for correctness and security.",
            ),
            doc(
                "work-writing",
                "Draft and edit documents, reports and letters.",
            ),
            doc("misc", "Helps with code."),
        ];
        let ranked = rank("please review my pull request", &docs);
        assert_eq!(ranked, ["coding-review"]);
        let ranked = rank("edit the PDF documents", &docs);
        assert_eq!(ranked[0], "pdf-tools");
        assert!(ranked.contains(&"work-writing".to_owned()));
        // "code" is a single short description term: ignored.
        assert!(rank("code", &docs).is_empty());
        assert!(rank("", &docs).is_empty());
        // Deterministic.
        assert_eq!(rank("edit the PDF documents", &docs), ranked);
    }
}
