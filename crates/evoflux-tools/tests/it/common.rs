//! What several files of these tests share: running a file's tests again
//! as an unprivileged user.

/// Runs this binary's tests of one file (`module`, as `"browser::"`)
/// again as `nobody`, skipping `skip` (the caller)
/// ([`evoflux_core::unprivileged`]). `TMPDIR` stays `/tmp`: sandboxed
/// commands get a private one, so the tests' folders are not below it.
pub fn rerun_unprivileged(module: &str, skip: &str) {
    evoflux_core::unprivileged::rerun_unprivileged(evoflux_core::unprivileged::Rerun {
        module,
        skip,
        programs: &[],
        tmpdir: evoflux_core::unprivileged::TmpDir::System,
    });
}
