//! Measures discovery plus catalog for 2,000 skills across four roots.
//!
//! `cargo run --release -p evoflux-skills --example discovery_bench`
//! prints the median of several runs (goal: under 100 ms). It is a
//! benchmark that reports figures, never a test that asserts on time.

use std::fs;
use std::time::{Duration, Instant};

use evoflux_core::AppMode;
use evoflux_skills::projection::runtime_projection;
use evoflux_skills::{
    CatalogRequest, CompatDir, LoadOptions, PlaceholderDirs, SkillOrigin, SkillRecord,
    SkillSettingsStore, SkillSource, WalkLimits, apply_overlay, build_catalog, load_bundle,
    scan_root,
};

const ROOTS: usize = 4;
const PER_ROOT: usize = 500;
const RUNS: usize = 11;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let sources = [
        SkillSource::Project(CompatDir::Evoflux),
        SkillSource::Project(CompatDir::Agents),
        SkillSource::User(CompatDir::Agents),
        SkillSource::Admin,
    ];
    let mut roots = Vec::new();
    for (r, source) in sources.iter().enumerate().take(ROOTS) {
        let root = tmp.path().join(format!("root{r}"));
        for i in 0..PER_ROOT {
            // Overlapping names across roots so collisions are exercised.
            let name = format!("skill-{:04}", (i * 3 + r * 7) % 1_500);
            let dir = root.join(&name);
            fs::create_dir_all(dir.join("references"))?;
            fs::write(
                dir.join("SKILL.md"),
                format!(
                    "---\nname: {name}\ndescription: Handles task number {i} about topic {r}; use when the request mentions {name}.\n---\n# {name}\nSteps.\n"
                ),
            )?;
            fs::write(dir.join("references/guide.md"), "guide")?;
        }
        roots.push((root, source.clone()));
    }
    let config = tmp.path().join("config");
    let store = SkillSettingsStore::in_config_dir(&config);
    let options = LoadOptions::new(PlaceholderDirs::from_config_dir(&config));

    let mut times = Vec::new();
    let mut listed = 0;
    for _ in 0..RUNS {
        let started = Instant::now();
        let overlay = store.read();
        let mut slots: std::collections::BTreeMap<String, Vec<SkillRecord>> = Default::default();
        for (root, source) in &roots {
            let origin = SkillOrigin::new(source.clone(), root);
            for b in scan_root(root, WalkLimits::default()).bundles {
                let mut rec = load_bundle(&b, &origin, &options);
                apply_overlay(&mut rec, &overlay);
                slots.entry(b.name.stem()).or_default().push(rec);
            }
        }
        let (records, _) = runtime_projection(slots.values().map(Vec::as_slice), AppMode::Coding);
        let catalog = build_catalog(
            &records,
            &CatalogRequest {
                mode: AppMode::Coding,
                context_window_tokens: Some(128_000),
                latest_request: Some("please handle topic 2 for skill-0042"),
                assigned: &[],
            },
        );
        listed = catalog.report.included.len();
        times.push(started.elapsed());
    }
    times.sort();
    let median: Duration = times[RUNS / 2];
    println!(
        "discovery + catalog, {} bundles in {ROOTS} roots: median {:.1} ms over {RUNS} runs (min {:.1} ms, max {:.1} ms); {listed} skills in the catalog",
        ROOTS * PER_ROOT,
        median.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[RUNS - 1].as_secs_f64() * 1e3,
    );
    Ok(())
}
