//! Binding command ids against `fleets/commands.yaml`.

use crate::common;

use std::path::Path;

use common::{V1, V3, V5, doc, valid};
use evoflux_fleet::bind::codes;
use evoflux_fleet::{CommandRegistry, bind_fleet_commands, fleet_command_ids};

fn registry(yaml: &str) -> CommandRegistry {
    match CommandRegistry::parse(Path::new("fleets/commands.yaml"), yaml) {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_contract_without_code_steps_needs_no_registry() {
    assert!(bind_fleet_commands(&valid(&doc(V1)), None).is_empty());
}

#[test]
fn a_missing_registry_names_every_command_once() {
    let c = valid(&doc(V3));
    assert_eq!(fleet_command_ids(&c), ["commit", "test"]);
    let d = bind_fleet_commands(&c, None);
    assert_eq!(d.codes(), [codes::REGISTRY_MISSING]);
    let msg = &d.as_slice()[0].message;
    assert!(msg.contains("declaring commit, test"), "{msg}");
}

#[test]
fn unknown_commands_are_named_per_step() {
    let c = valid(&doc(V3));
    let d = bind_fleet_commands(
        &c,
        Some(&registry(
            "version: 1\ncommands:\n  lint:\n    argv: [ruff]\n",
        )),
    );
    assert_eq!(d.codes(), [codes::COMMAND_UNKNOWN, codes::COMMAND_UNKNOWN]);
    let first = &d.as_slice()[0];
    assert_eq!(
        first.locator.field.as_deref(),
        Some("steps.suite.check.command")
    );
    assert_eq!(
        first.message,
        "step 'suite.check' names unknown command 'test' (registered: lint)"
    );
    let ok = registry(
        "version: 1\ncommands:\n  test:\n    argv: [cargo, test]\n  commit:\n    argv: [git, commit, -m, '{{commitMessage}}']\n",
    );
    assert!(bind_fleet_commands(&c, Some(&ok)).is_empty());
}

#[test]
fn args_fill_declared_slots_only() {
    let yaml = V3.replace(
        "check: {kind: code, command: test, scope: workspace}",
        "check: {kind: code, command: test, args: ['{{filter}}', extra], scope: workspace}",
    );
    let c = valid(&doc(&yaml));
    let reg = registry(
        "version: 1\ncommands:\n  test:\n    argv: [cargo, test]\n    argumentSlots: [{name: filter, maxLength: 64}]\n  commit:\n    argv: [git, commit]\n",
    );
    let d = bind_fleet_commands(&c, Some(&reg));
    assert_eq!(d.codes(), [codes::COMMAND_ARGUMENTS]);
    assert_eq!(
        d.as_slice()[0].locator.field.as_deref(),
        Some("steps.suite.check.args")
    );

    let flag = valid(&doc(&V3.replace(
        "check: {kind: code, command: test, scope: workspace}",
        "check: {kind: code, command: test, args: ['--all'], scope: workspace}",
    )));
    let d = bind_fleet_commands(&flag, Some(&reg));
    assert_eq!(d.codes(), [codes::COMMAND_ARGUMENTS]);
    assert!(d.as_slice()[0].message.contains("leading dash"));
}

#[test]
fn the_args_field_is_named_whatever_the_step_id() {
    // A step id may contain `.command`; the locator is built, not edited.
    let yaml = V3
        .replace("id: commit,", "id: run.command,")
        .replace("command: commit,", "command: commit, args: [one],");
    let c = valid(&doc(&yaml));
    let reg = registry(
        "version: 1\ncommands:\n  test:\n    argv: [cargo, test]\n  commit:\n    argv: [git, commit]\n",
    );
    let d = bind_fleet_commands(&c, Some(&reg));
    assert_eq!(d.codes(), [codes::COMMAND_ARGUMENTS]);
    let only = &d.as_slice()[0];
    assert_eq!(
        only.locator.field.as_deref(),
        Some("steps.run.command.args")
    );
    assert_eq!(
        only.message,
        "step 'run.command': fleet command 'commit': expected 0 declared argument slots, got 1; \
         the operator must declare argumentSlots in fleets/commands.yaml"
    );
}

#[test]
fn a_gate_command_receives_the_path() {
    let c = valid(&doc(V5));
    let without = registry("version: 1\ncommands:\n  acceptance:\n    argv: [node, tests/a.mjs]\n");
    let d = bind_fleet_commands(&c, Some(&without));
    assert_eq!(d.codes(), [codes::GATE_COMMAND_PATH]);
    assert_eq!(
        d.as_slice()[0].locator.field.as_deref(),
        Some("steps.acceptance.run")
    );
    let with = registry("version: 1\ncommands:\n  acceptance:\n    argv: [node, '{{path}}']\n");
    assert!(bind_fleet_commands(&c, Some(&with)).is_empty());
}

#[test]
fn every_agent_a_contract_names_is_checked_against_the_workers_with_its_field() {
    let contract = valid(&doc(V5));
    let workers = |ids: &[&str]| ids.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert!(
        evoflux_fleet::bind_fleet_agents(&contract, &workers(&["architect", "coder", "tester"]))
            .is_empty()
    );
    let d = evoflux_fleet::bind_fleet_agents(&contract, &workers(&["architect", "coder"]));
    let fields: Vec<(&str, Option<&str>)> = d
        .iter()
        .map(|d| (&*d.code, d.locator.field.as_deref()))
        .collect();
    assert_eq!(
        fields,
        [
            ("fleet/agent-unknown", Some("steps.acceptance.agent")),
            ("fleet/agent-unknown", Some("steps.architect.roster[1]")),
        ]
    );
}

#[test]
fn a_registry_awaiting_trust_is_named_with_its_repository_and_the_remedy() {
    use evoflux_fleet::{RegistryState, bind_awaiting_trust};
    let awaiting = RegistryState::AwaitingTrust {
        path: "/work/repo/.evoflux/fleets/commands.yaml".into(),
        repository: "/work/repo".into(),
    };
    // A contract that runs commands: its first command is named.
    let d = bind_awaiting_trust(&valid(&doc(V3)), &awaiting, &[]);
    assert_eq!(d.codes(), [codes::REGISTRY_AWAITING_TRUST]);
    let first = &d.as_slice()[0];
    assert_eq!(
        first.locator.field.as_deref(),
        Some("steps.suite.check.command")
    );
    assert!(
        first
            .message
            .contains("/work/repo/.evoflux/fleets/commands.yaml"),
        "{}",
        first.message
    );
    assert!(
        first.message.contains("`evoflux trust /work/repo`"),
        "{}",
        first.message
    );
    // One that runs none needs the registry only through a worker that
    // requires `verify`.
    let agents_only = valid(&doc(V1));
    assert!(bind_awaiting_trust(&agents_only, &awaiting, &[]).is_empty());
    assert!(bind_awaiting_trust(&agents_only, &awaiting, &["tester".to_owned()]).is_empty());
    let d = bind_awaiting_trust(&agents_only, &awaiting, &["verifier".to_owned()]);
    assert_eq!(d.codes(), [codes::REGISTRY_AWAITING_TRUST]);
    assert_eq!(
        d.as_slice()[0].locator.field.as_deref(),
        Some("steps.check.agent")
    );
    assert!(
        d.as_slice()[0]
            .message
            .contains("'verifier' requires `verify`")
    );
    // A registry that is loaded or missing is not waiting for anything.
    let loaded = RegistryState::Loaded(registry(
        "version: 1\ncommands:\n  test:\n    argv: [cargo, test]\n",
    ));
    for state in [RegistryState::Missing, loaded] {
        let d = bind_awaiting_trust(&valid(&doc(V3)), &state, &["verifier".to_owned()]);
        assert!(d.is_empty(), "{}", d.render_human());
    }
}
