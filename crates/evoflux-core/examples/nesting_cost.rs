//! What hostile YAML costs with the pre-parse guard, and what it cost the
//! parser without it (issue #46: 100,000 nested brackets in a front matter
//! value took 29 s per command). Prints figures and asserts nothing:
//!
//! `cargo run --release -p evoflux-core --example nesting_cost [DEPTH...]`
//!
//! Each DEPTH given is also parsed by `yaml_serde` without the guard, to
//! show the cost the guard avoids (quadratic: 20,000 takes seconds).

use std::time::{Duration, Instant};

use evoflux_core::frontmatter;
use evoflux_core::nesting;

/// The fastest of a few runs of `f`.
fn best<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(f());
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn brackets(depth: usize) -> String {
    format!(
        "---\nname: x\ndescription: d\ntools: {}{}\n---\nbody\n",
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

fn ms(d: Duration) -> String {
    match d.as_secs_f64() * 1000.0 {
        m if m < 1.0 => format!("{:.1} µs", m * 1000.0),
        m => format!("{m:.1} ms"),
    }
}

fn main() {
    println!("hostile front matter, refused through frontmatter::parse:");
    for depth in [100_000, 200_000] {
        let text = brackets(depth);
        let outcome = match frontmatter::parse(&text) {
            Ok(_) => "parsed".to_owned(),
            Err(e) => e.kind.code().to_owned(),
        };
        let took = best(5, || frontmatter::parse(&text).is_err());
        println!(
            "  {depth:>7} brackets ({:>3} KB): {outcome}, {}",
            text.len() / 1000,
            ms(took)
        );
    }

    let mut laughs = String::from(
        "---\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for (prev, name) in ["a", "b", "c", "d", "e", "f", "g", "h"]
        .iter()
        .zip(["b", "c", "d", "e", "f", "g", "h", "i"])
    {
        laughs.push_str(&format!(
            "{name}: &{name} [{}]\n",
            vec![format!("*{prev}"); 9].join(",")
        ));
    }
    laughs.push_str("---\n");
    let took = best(5, || frontmatter::parse(&laughs).is_err());
    let code = frontmatter::parse(&laughs)
        .err()
        .map_or("parsed", |e| e.kind.code());
    println!(
        "  billion laughs ({} bytes): {code}, {}",
        laughs.len(),
        ms(took)
    );

    // What the guard adds to an honest file near the size cap.
    let mut honest = String::new();
    for i in 0..6_000 {
        honest.push_str(&format!(
            "key{i}:\n  description: \"Use when [a] or {{b}}\" # note\n  list: [a, 'b', {{c: d}}]\n"
        ));
    }
    let guard = best(5, || nesting::check_yaml(&honest));
    let parse = best(5, || frontmatter::parse_yaml_mapping(&honest, 1).is_ok());
    println!(
        "honest YAML of {} KB: guard {}, guard and parse {}",
        honest.len() / 1000,
        ms(guard),
        ms(parse)
    );
    // The worst an accepted file can do: every line as deep as allowed.
    let mut deepest = String::new();
    let line = format!(
        "{}{}",
        "[".repeat(nesting::MAX_DEPTH - 1),
        "]".repeat(nesting::MAX_DEPTH - 1)
    );
    for i in 0..3_000 {
        deepest.push_str(&format!("k{i}: {line}\n"));
    }
    let guard = best(5, || nesting::check_yaml(&deepest));
    let parse = best(3, || frontmatter::parse_yaml_mapping(&deepest, 1).is_ok());
    println!(
        "{} KB of lines {} levels deep (accepted): guard {}, guard and parse {}",
        deepest.len() / 1000,
        nesting::MAX_DEPTH,
        ms(guard),
        ms(parse)
    );
    let json = format!("{{\"a\": {}{}}}", "[".repeat(200_000), "]".repeat(200_000));
    let took = best(5, || nesting::check_json(&json).is_err());
    println!("JSON of 200,000 brackets: refused in {}", ms(took));

    let depths: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    if !depths.is_empty() {
        println!("without the guard (yaml_serde alone):");
    }
    for depth in depths {
        let yaml = format!("k: {}{}\n", "[".repeat(depth), "]".repeat(depth));
        let took = best(1, || {
            yaml_serde::from_str::<yaml_serde::Value>(&yaml).is_err()
        });
        println!("  {depth:>7} brackets: {}", ms(took));
    }
}
