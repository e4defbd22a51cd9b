//! The limits and confinement of a worker process.
//!
//! - **Resource limits** are set by the server between `fork` and `exec` ([`limit_child`]):
//!   address space (`RLIMIT_AS`), CPU seconds (`RLIMIT_CPU`: `SIGXCPU` at the limit, `SIGKILL`
//!   a second later), file size (`RLIMIT_FSIZE`), open files, no core dumps; the worker dies
//!   with the server (`PR_SET_PDEATHSIG`) and cannot gain privileges (`PR_SET_NO_NEW_PRIVS`).
//!   Its environment is emptied by the caller; only what the decoders need is set again.
//! - **Confinement** is applied by the worker itself, after it has read its inputs and before it
//!   decodes a byte of them ([`confine`]): Landlock allows file access only beneath its own
//!   directory and no TCP bind or connect (kernels with Landlock ABI 4 or later), and a seccomp
//!   filter refuses (`EPERM`) the system calls a decoder never needs: sockets, `exec`, new
//!   processes, tracing, mounts, namespaces, kernel keyrings, BPF, io_uring. On a kernel without
//!   a feature the worker runs with what there is and says so in its hello, which the server
//!   logs as a warning; the resource limits hold everywhere.

use std::io;
use std::path::Path;

use super::protocol::Hello;

/// The resource limits of one worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rlimits {
    pub address_space: u64,
    pub cpu_secs: u64,
    pub file_size: u64,
    pub open_files: u64,
}

/// Makes `command` start its process under `limits`, tied to the server's life.
pub fn limit_child(command: &mut tokio::process::Command, limits: Rlimits) {
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe functions may be called: it makes setrlimit and prctl system calls on
    // values copied in, allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(move || {
            set(libc::RLIMIT_AS, limits.address_space, limits.address_space)?;
            // The soft limit sends SIGXCPU, which the worker does not catch; the hard limit a
            // second later is SIGKILL, should it be caught anyway.
            set(libc::RLIMIT_CPU, limits.cpu_secs, limits.cpu_secs + 1)?;
            set(libc::RLIMIT_FSIZE, limits.file_size, limits.file_size)?;
            set(libc::RLIMIT_NOFILE, limits.open_files, limits.open_files)?;
            set(libc::RLIMIT_CORE, 0, 0)?;
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(target_os = "linux")]
type Resource = libc::__rlimit_resource_t;

fn set(resource: Resource, soft: u64, hard: u64) -> io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: soft as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: a plain system call on a value on the stack.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Confines the calling process (single-threaded: the worker) to `dir`. Returns what is in
/// force; never fails, since a missing kernel feature only weakens the confinement.
pub fn confine(dir: &Path) -> Hello {
    let landlock = landlock(dir);
    let seccomp = match seccomp() {
        Ok(()) => "on".to_string(),
        Err(reason) => format!("none ({reason})"),
    };
    Hello { landlock, seccomp }
}

fn landlock(dir: &Path) -> String {
    use landlock::{
        Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, ABI,
    };
    let abi = ABI::V5;
    let status = (|| -> Result<_, String> {
        let own = PathFd::new(dir).map_err(|e| e.to_string())?;
        Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .map_err(|e| e.to_string())?
            .handle_access(AccessNet::from_all(abi))
            .map_err(|e| e.to_string())?
            .create()
            .map_err(|e| e.to_string())?
            .add_rule(PathBeneath::new(own, AccessFs::from_all(abi)))
            .map_err(|e| e.to_string())?
            .restrict_self()
            .map_err(|e| e.to_string())
    })();
    match status {
        Ok(status) => match status.ruleset {
            RulesetStatus::FullyEnforced => "full".to_string(),
            RulesetStatus::PartiallyEnforced => {
                "partial (the kernel lacks some landlock rights)".to_string()
            }
            RulesetStatus::NotEnforced => "none (the kernel does not enforce landlock)".to_string(),
        },
        Err(reason) => format!("none ({reason})"),
    }
}

/// The system calls a decoder never makes.
fn denied() -> Vec<libc::c_long> {
    let mut calls = vec![
        libc::SYS_socket,
        libc::SYS_socketpair,
        libc::SYS_connect,
        libc::SYS_bind,
        libc::SYS_listen,
        libc::SYS_accept,
        libc::SYS_accept4,
        libc::SYS_execve,
        libc::SYS_execveat,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
        libc::SYS_kexec_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_fork, libc::SYS_vfork]);
    calls
}

fn seccomp() -> Result<(), String> {
    use std::collections::BTreeMap;

    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};

    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    // An empty rule list matches the call whatever its arguments.
    let rules: BTreeMap<i64, Vec<seccompiler::SeccompRule>> = denied()
        .into_iter()
        .map(|call| (call, Vec::new()))
        .collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    seccompiler::apply_filter(&program).map_err(|e| e.to_string())
}
