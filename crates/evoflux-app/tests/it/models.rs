//! `/model`'s choices: the configured default, `[prices]` entries of a
//! configured provider, and the known models of each remote provider.

use evoflux_app::models::ModelSource;
use evoflux_app::testing::app;

#[test]
fn the_choices_are_the_default_the_priced_and_the_known_models_of_configured_providers() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let config = app.dirs.config_dir().join("config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        r#"
[model]
default = "work-llm:gpt-4.1"

[providers.work-llm]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"

[prices."work-llm:house-model"]
input = 1.0
output = 2.0
"#,
    )
    .unwrap();
    let choices = app.model_choices().unwrap();
    assert_eq!(choices[0].reference, "work-llm:gpt-4.1");
    assert_eq!(choices[0].source, ModelSource::Default);
    let find = |r: &str| choices.iter().find(|c| c.reference == r).map(|c| c.source);
    assert_eq!(find("work-llm:house-model"), Some(ModelSource::Priced));
    assert_eq!(find("work-llm:gpt-5"), Some(ModelSource::Known));
    assert_eq!(
        find("anthropic:claude-sonnet-4-5"),
        Some(ModelSource::Known)
    );
    // Each reference once: the default is not listed again as known.
    let default = choices
        .iter()
        .filter(|c| c.reference == "work-llm:gpt-4.1")
        .count();
    assert_eq!(default, 1);
    // Nothing of a provider kind that lists no models.
    assert!(!choices.iter().any(|c| c.reference.starts_with("scripted:")));
}
