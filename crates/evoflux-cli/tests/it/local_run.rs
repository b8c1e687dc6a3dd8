#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The README's local-model demo through the real binary and the real
//! embedded model: no model flag, no key, a constrained `final_output`.
//! Needs the GGUF named by `EVOFLUX_TEST_GGUF` (`.ci/run` fetches it);
//! says it is skipped without it.

use crate::common;

use common::Sandbox;
use serde_json::Value;

#[test]
fn the_embedded_model_answers_the_demo_with_a_schema_valid_result() {
    let Some(gguf) = std::env::var_os("EVOFLUX_TEST_GGUF") else {
        eprintln!("note: EVOFLUX_TEST_GGUF is not set; skipping the local-model run");
        return;
    };
    let s = Sandbox::new();
    // The embedded default provider, pointed at the fetched file.
    s.user(
        "config.toml",
        &format!(
            "[providers.local]\nkind = \"local\"\nmodel_path = {:?}\ncontext_window = 8192\n",
            std::path::PathBuf::from(&gguf).display().to_string()
        ),
    );
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/local-demo");
    let schema = format!("{demo}/answer.schema.json");
    let out = s
        .command(&[
            "run",
            "--workspace",
            demo,
            "--lead",
            "answerer",
            "--max-model-calls",
            "3",
            "--output-schema",
            &schema,
            "Is water wet?",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("local:smollm2-135m-instruct"), "{stderr}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not the JSON result ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let validator = jsonschema::validator_for(
        &serde_json::from_str(&std::fs::read_to_string(&schema).unwrap()).unwrap(),
    )
    .unwrap();
    assert!(validator.is_valid(&answer), "{answer}");
}
