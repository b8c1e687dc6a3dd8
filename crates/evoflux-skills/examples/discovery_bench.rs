//! Measures discovery plus catalog for 2,000 skills across four roots,
//! through the real path: the source graph discovers and composes the
//! `skills/<name>` slots, `selection` loads each slot's ordered candidates
//! with the overlay, the runtime projection picks per mode, and the Tier-1
//! catalog is built.
//!
//! `cargo run --release -p evoflux-skills --example discovery_bench`
//! prints the median of several runs (goal: under 100 ms). It is a
//! benchmark that reports figures, never a test that asserts on time.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use evoflux_core::AppMode;
use evoflux_graph::discover::standard_roots;
use evoflux_graph::{BuiltinRegistry, RootOptions};
use evoflux_skills::projection::runtime_projection;
use evoflux_skills::selection::{Depth, skill_slots};
use evoflux_skills::{
    CatalogRequest, LoadOptions, PlaceholderDirs, SkillSettingsStore, build_catalog,
};

const PER_ROOT: usize = 500;
const RUNS: usize = 11;

fn write_root(root: &Path, r: usize) -> std::io::Result<()> {
    for i in 0..PER_ROOT {
        // Overlapping names across roots so shadowing is exercised.
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
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let repo = tmp.path().join("repo");
    let config = tmp.path().join("config");
    let admin = tmp.path().join("admin");
    fs::create_dir_all(repo.join(".git"))?;
    write_root(&repo.join(".evoflux/skills"), 0)?;
    write_root(&repo.join(".agents/skills"), 1)?;
    write_root(&config.join("skills"), 2)?;
    write_root(&admin.join("skills"), 3)?;
    let opts = RootOptions {
        admin_dir: Some(admin),
        user_config_dir: Some(config.clone()),
        home: None,
        trusted: vec![repo.clone()],
        workspaces: vec![repo],
        plugins: Vec::new(),
        foreign_mcp: Vec::new(),
    };
    let registries = [
        BuiltinRegistry::framework(),
        evoflux_skills::bundled::registry(),
    ];
    let store = SkillSettingsStore::in_config_dir(&config);
    let options = LoadOptions::new(PlaceholderDirs::from_config_dir(&config));

    let mut times = Vec::new();
    let mut phases: [Vec<Duration>; 3] = Default::default();
    let mut listed = 0;
    let mut slots_seen = 0;
    for _ in 0..RUNS {
        let started = Instant::now();
        let graph = evoflux_graph::compile(&registries, &standard_roots(&opts))?;
        phases[0].push(started.elapsed());
        let overlay = store.read();
        let (slots, _) = skill_slots(&graph, &options, &overlay, Depth::Settled);
        phases[1].push(started.elapsed());
        let (records, _) = runtime_projection(
            slots.iter().map(|s| s.candidates.as_slice()),
            AppMode::Coding,
        );
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
        slots_seen = slots.len();
        times.push(started.elapsed());
    }
    times.sort();
    let median: Duration = times[RUNS / 2];
    for p in &mut phases {
        p.sort();
    }
    println!(
        "phases (cumulative medians): graph compile {:.1} ms, + selection {:.1} ms, + projection and catalog {:.1} ms",
        phases[0][RUNS / 2].as_secs_f64() * 1e3,
        phases[1][RUNS / 2].as_secs_f64() * 1e3,
        median.as_secs_f64() * 1e3,
    );
    println!(
        "graph + selection + catalog, {} bundles in 4 roots ({slots_seen} slots): median {:.1} ms over {RUNS} runs (min {:.1} ms, max {:.1} ms); {listed} skills in the catalog",
        4 * PER_ROOT,
        median.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[RUNS - 1].as_secs_f64() * 1e3,
    );
    Ok(())
}
