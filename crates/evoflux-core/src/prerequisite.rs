//! What a test needs from the machine that Cargo cannot build: bubblewrap,
//! Chromium with its driver, a PostgreSQL server. On a developer's machine
//! a test without one is skipped, saying what to install; in CI (`CI` set,
//! as `.ci/run` sets it) a missing prerequisite fails the test, so a run
//! that installed nothing cannot pass by skipping everything.

/// Whether this process runs in CI (see [`means_ci`]).
pub fn in_ci() -> bool {
    means_ci(std::env::var("CI").ok().as_deref())
}

/// Whether a value of `CI` means CI: set to anything but empty, `0` or
/// `false` (the convention of CI services).
pub fn means_ci(value: Option<&str>) -> bool {
    value.is_some_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false"))
}

/// Reports that `what` is missing. Outside CI it says on stderr what to
/// install and returns, for the caller to skip; in CI it panics with the
/// same words.
///
/// # Panics
/// In CI, always: the prerequisite should have been installed.
pub fn missing(what: &str, install: &str) {
    let message = format!("{what} is missing; {install}");
    if in_ci() {
        panic!("CI needs this test's prerequisite: {message}");
    }
    eprintln!("skipped: {message} (in CI this fails)");
}

#[cfg(test)]
mod tests {
    use super::means_ci;

    #[test]
    fn ci_is_any_value_but_the_false_ones() {
        for (value, expected) in [
            (Some("true"), true),
            (Some("1"), true),
            (Some("yes"), true),
            (Some("0"), false),
            (Some("false"), false),
            (Some("False"), false),
            (Some(""), false),
            (None, false),
        ] {
            assert_eq!(means_ci(value), expected, "{value:?}");
        }
    }
}
