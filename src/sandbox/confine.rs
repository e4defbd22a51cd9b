//! The limits and confinement of a worker process.
//!
//! - **Resource limits** are given by the server on the worker's command line and set by the
//!   worker first thing, before it reads its envelope or its input ([`limit_self`]): address
//!   space (`RLIMIT_AS`), CPU seconds (`RLIMIT_CPU`: `SIGXCPU` at the limit, `SIGKILL` a second
//!   later), file size (`RLIMIT_FSIZE`), open files, no core dumps; the worker dies with the
//!   server (`PR_SET_PDEATHSIG`), cannot gain privileges (`PR_SET_NO_NEW_PRIVS`) and keeps no
//!   descriptor but its three pipes (`close_range`). Nothing runs in the server between fork
//!   and exec, so the server is never forked whole (`posix_spawn`). The worker's environment is
//!   emptied by the server; only what the decoders need is set again.
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

impl Rlimits {
    /// The worker's arguments after `worker` that carry the limits.
    pub fn to_args(self) -> [String; 3] {
        [
            self.address_space.to_string(),
            self.cpu_secs.to_string(),
            self.file_size.to_string(),
        ]
    }

    /// The limits from the worker's arguments after `worker`; `None` when they are not three
    /// numbers.
    pub fn from_args(args: &[String]) -> Option<Rlimits> {
        let [address_space, cpu_secs, file_size] = args else {
            return None;
        };
        Some(Rlimits {
            address_space: address_space.parse().ok()?,
            cpu_secs: cpu_secs.parse().ok()?,
            file_size: file_size.parse().ok()?,
            open_files: OPEN_FILES,
        })
    }
}

/// Descriptors a worker may have open: its three pipes, its input, Tesseract's data files.
pub const OPEN_FILES: u64 = 64;

/// Puts the calling process (the worker, first thing, before it reads any input) under
/// `limits`, ties it to the server's life and closes every descriptor but its three pipes.
/// The server starts workers without a `pre_exec` hook, so that the standard library can use
/// `posix_spawn` instead of forking the whole server.
pub fn limit_self(limits: Rlimits) -> io::Result<()> {
    // Only stdin, stdout and stderr stay, even a descriptor some library of the server opened
    // without close-on-exec (Landlock does not restrict descriptors already open). Linux 5.9
    // and later; on older kernels close-on-exec is all there is.
    // SAFETY: a plain system call with integer arguments; the worker opened no descriptor yet.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            0,
        );
    }
    set(libc::RLIMIT_AS, limits.address_space, limits.address_space)?;
    // The soft limit sends SIGXCPU, which the worker does not catch; the hard limit a second
    // later is SIGKILL, should it be caught anyway.
    set(libc::RLIMIT_CPU, limits.cpu_secs, limits.cpu_secs + 1)?;
    set(libc::RLIMIT_FSIZE, limits.file_size, limits.file_size)?;
    set(libc::RLIMIT_NOFILE, limits.open_files, limits.open_files)?;
    set(libc::RLIMIT_CORE, 0, 0)?;
    // SAFETY: prctl with integer arguments.
    let (death, privileges) = unsafe {
        (
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ),
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
        )
    };
    if death != 0 || privileges != 0 {
        return Err(io::Error::last_os_error());
    }
    // The server may have died before the death signal was armed: then there is no one to
    // answer.
    // SAFETY: getppid has no arguments and cannot fail.
    if unsafe { libc::getppid() } == 1 {
        return Err(io::Error::other("the server is gone"));
    }
    Ok(())
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
