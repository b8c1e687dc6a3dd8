//! Strict `{{var}}` rendering.

use crate::common;

use common::vars;
use evoflux_fleet::{RenderError, render_fleet_prompt, template_variables};

#[test]
fn placeholders_resolve() {
    assert_eq!(
        render_fleet_prompt("Run {{target}}.", &vars(&[("target", "src")])),
        Ok("Run src.".to_owned())
    );
    assert_eq!(
        render_fleet_prompt(
            "{{ a }}-{{b_c-d}}{{a}}",
            &vars(&[("a", "1"), ("b_c-d", "2")])
        ),
        Ok("1-21".to_owned())
    );
}

#[test]
fn every_missing_name_is_listed_once_in_order() {
    let err = render_fleet_prompt(
        "{{zeta}} then {{alpha}} and {{zeta}} with {{known}} and {{ beta }}",
        &vars(&[("known", "k")]),
    );
    assert_eq!(
        err,
        Err(RenderError {
            names: vec!["zeta".to_owned(), "alpha".to_owned(), "beta".to_owned()]
        })
    );
    let Err(e) = err else { unreachable!() };
    assert_eq!(
        e.to_string(),
        "fleet prompt: unresolved template variables: zeta, alpha, beta; give each a value for the run"
    );
    assert_eq!(
        e.to_diagnostic(std::path::Path::new("fleets/x.md")).code,
        "fleet/prompt-unresolved"
    );
}

#[test]
fn values_are_literal_and_not_expanded_again() {
    assert_eq!(
        render_fleet_prompt("{{a}}", &vars(&[("a", "{{b}}"), ("b", "no")])),
        Ok("{{b}}".to_owned())
    );
}

#[test]
fn text_that_is_not_a_placeholder_is_left_alone() {
    let text = "json {{ }} {{1x}} {{a b}} {{ open and }} close {x}";
    assert_eq!(render_fleet_prompt(text, &vars(&[])), Ok(text.to_owned()));
    assert_eq!(
        render_fleet_prompt("{{{x}}}", &vars(&[("x", "v")])),
        Ok("{v}".to_owned())
    );
    assert_eq!(
        template_variables("{{a}} {{b}} {{a}} {{ 9 }}"),
        vec!["a".to_owned(), "b".to_owned()]
    );
}
