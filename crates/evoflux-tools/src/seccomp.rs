//! The system calls a sandboxed command may not make, as seccomp programs
//! bubblewrap loads right before it runs the command.
//!
//! bubblewrap drops every capability (`--cap-drop ALL`), sets
//! `no_new_privs` and, where the kernel allows, puts the command in a user
//! namespace of its own; that already leaves no privilege to abuse. The
//! filter is the second fence that holds even where one of those is
//! missing (root without user namespaces, a kernel with a hole in one of
//! them): no mount or unmount of any kind, no new namespaces, no joining
//! another's, no kernel keyring, BPF, perf, io_uring, module or kexec
//! loading, no ptrace, no file handles that bypass the mount view
//! (`open_by_handle_at`, the classic container escape), no clock or
//! reboot. With `network = "deny"`, Unix-domain sockets cannot be created
//! either, so a host socket reachable through the read-only filesystem
//! (Docker's, an ssh-agent's) cannot be connected to; `socketpair` stays,
//! since it connects nothing outside the command.
//!
//! No call may set a file's setuid or setgid bit (`chmod 4755`, or a file
//! created with that mode), so a command run as root cannot leave a
//! root-owned setuid program behind for the host.
//!
//! `clone3` and `openat2` take their flags behind a pointer a filter
//! cannot read, so they answer `ENOSYS` from a program of their own: the
//! C library then falls back to `clone` and `openat`, whose arguments the
//! main program checks.

use std::collections::BTreeMap;
use std::sync::Arc;

use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

use crate::error::ToolError;

/// System calls refused with `EPERM` whatever their arguments.
const DENIED: &[i64] = &[
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_syslog,
    libc::SYS_quotactl,
    libc::SYS_vhangup,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_uselib,
];

/// Calls that set a file's mode, with the index of their mode argument:
/// none may set the setuid or setgid bit. A command running as root would
/// otherwise leave a root-owned setuid program in the workspace, which
/// runs as root on the host (the sandbox's `nosuid` holds only inside).
const MODE_ARGUMENTS: &[(i64, u8)] = &[
    (libc::SYS_fchmod, 1),
    (libc::SYS_fchmodat, 2),
    (libc::SYS_fchmodat2, 2),
    (libc::SYS_openat, 3),
    (libc::SYS_mknodat, 2),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_chmod, 1),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_open, 2),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_creat, 1),
    #[cfg(target_arch = "x86_64")]
    (libc::SYS_mknod, 1),
];

/// `clone` flags that make a namespace.
const NAMESPACE_FLAGS: [u64; 7] = [
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
];

/// The compiled programs of one sandbox, in the order bubblewrap loads
/// them (`--add-seccomp-fd`, once each).
#[derive(Debug, Clone)]
pub(crate) struct Filters {
    pub programs: Vec<Arc<[u8]>>,
}

impl Filters {
    /// Compiles the programs for this machine's architecture.
    /// `deny_unix_sockets`: the policy denies the network.
    pub(crate) fn compile(deny_unix_sockets: bool) -> Result<Filters, ToolError> {
        let arch = target_arch()?;
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
            DENIED.iter().map(|nr| (*nr, Vec::new())).collect();
        let clone_rules = NAMESPACE_FLAGS
            .iter()
            .map(|flag| rule(&[(0, SeccompCmpOp::MaskedEq(*flag), *flag)]))
            .collect::<Result<Vec<_>, _>>()?;
        rules.insert(libc::SYS_clone, clone_rules);
        if deny_unix_sockets {
            let unix = libc::AF_UNIX as u64;
            rules.insert(
                libc::SYS_socket,
                vec![rule(&[(0, SeccompCmpOp::Eq, unix)])?],
            );
            // A datagram pair can still `sendto` a host socket's path.
            rules.insert(
                libc::SYS_socketpair,
                vec![rule(&[
                    (0, SeccompCmpOp::Eq, unix),
                    (
                        1,
                        SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
                        libc::SOCK_DGRAM as u64,
                    ),
                ])?],
            );
        }
        for &(nr, mode_arg) in MODE_ARGUMENTS {
            let bits = [libc::S_ISUID as u64, libc::S_ISGID as u64];
            let setid = bits
                .iter()
                .map(|bit| rule(&[(mode_arg, SeccompCmpOp::MaskedEq(*bit), *bit)]))
                .collect::<Result<Vec<_>, _>>()?;
            rules.insert(nr, setid);
        }
        add_x32_aliases(&mut rules);
        let main = program(rules, SeccompAction::Errno(libc::EPERM as u32), arch)?;
        // Calls whose arguments sit behind a pointer: "not implemented", so
        // the C library falls back to the calls the main program reads.
        let mut unreadable: BTreeMap<i64, Vec<SeccompRule>> = [libc::SYS_clone3, libc::SYS_openat2]
            .into_iter()
            .map(|nr| (nr, Vec::new()))
            .collect();
        add_x32_aliases(&mut unreadable);
        let clone3 = program(unreadable, SeccompAction::Errno(libc::ENOSYS as u32), arch)?;
        Ok(Filters {
            programs: vec![main, clone3],
        })
    }
}

fn target_arch() -> Result<TargetArch, ToolError> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|e| ToolError::SandboxUnavailable {
        reason: format!(
            "no seccomp filter for this architecture ({}): {e}",
            std::env::consts::ARCH
        ),
    })
}

/// The bits of `socket`'s type argument that name the type (the rest are
/// `SOCK_NONBLOCK` and `SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u64 = 0xf;

/// One rule: every condition must hold. Arguments are compared as the
/// kernel reads them: these are `int`s, whose upper 32 bits it ignores,
/// so a 64-bit comparison could be dodged by setting them.
fn rule(conditions: &[(u8, SeccompCmpOp, u64)]) -> Result<SeccompRule, ToolError> {
    let conditions = conditions
        .iter()
        .map(|(arg, op, value)| {
            SeccompCondition::new(*arg, SeccompCmpArgLen::Dword, op.clone(), *value)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(seccomp_error)?;
    SeccompRule::new(conditions).map_err(seccomp_error)
}

/// On x86_64 the x32 ABI reaches the same calls under their number with
/// bit 30 set, and shares the architecture tag the filter checks: each
/// rule is repeated for that number.
#[cfg(target_arch = "x86_64")]
fn add_x32_aliases(rules: &mut BTreeMap<i64, Vec<SeccompRule>>) {
    const X32_BIT: i64 = 0x4000_0000;
    let aliases: Vec<(i64, Vec<SeccompRule>)> = rules
        .iter()
        .map(|(nr, r)| (nr | X32_BIT, r.clone()))
        .collect();
    rules.extend(aliases);
}

#[cfg(not(target_arch = "x86_64"))]
fn add_x32_aliases(_: &mut BTreeMap<i64, Vec<SeccompRule>>) {}

/// One program: the rules' calls get `action`, everything else runs.
fn program(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    action: SeccompAction,
    arch: TargetArch,
) -> Result<Arc<[u8]>, ToolError> {
    let filter =
        SeccompFilter::new(rules, SeccompAction::Allow, action, arch).map_err(seccomp_error)?;
    let program: seccompiler::BpfProgram = filter.try_into().map_err(seccomp_error)?;
    // bubblewrap reads the program as the kernel takes it: `struct
    // sock_filter` in native byte order, back to back.
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for insn in &program {
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
    }
    Ok(bytes.into())
}

fn seccomp_error(e: impl std::fmt::Display) -> ToolError {
    ToolError::SandboxUnavailable {
        reason: format!("the seccomp filter cannot be built: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_programs_compile_and_the_network_rule_adds_instructions() {
        let open = Filters::compile(false).unwrap();
        let closed = Filters::compile(true).unwrap();
        assert_eq!(open.programs.len(), 2);
        assert!(
            open.programs
                .iter()
                .all(|p| p.len() % 8 == 0 && !p.is_empty())
        );
        assert!(closed.programs[0].len() > open.programs[0].len());
    }
}
