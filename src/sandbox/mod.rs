//! The trust boundary: every byte a user uploads (or a URL serves) is decoded in a worker
//! process, never in the server. [`Workers`] implements the pipeline's
//! [`Decoder`]: each call starts `memvault worker` (the same binary) in a fresh directory of
//! its own, under resource limits ([`confine::limit_child`]) and confined by the worker itself
//! ([`confine::confine`]), with a wall-clock deadline, and reads its answer under an output
//! limit. One worker per call, never reused: no state, and no tenant's bytes, outlive it.
//!
//! How an attempt ends, and what the document's history says:
//!
//! | the worker | the attempt | retried? |
//! |---|---|---|
//! | answers | its result | - |
//! | refuses the input (corrupt, encrypted, a parser's limit) | `failed`, the parser's reason | no |
//! | runs out of memory | `the parser ran out of memory (limit 1024 MB, worker.memory_mb)` | no |
//! | uses up its CPU seconds | `... CPU time limit (60 s, worker.cpu_secs)` | no |
//! | passes its deadline (killed) | `... deadline (120 s, worker.deadline_secs)` | no |
//! | hands back too much | `... output limit (64 MB, worker.output_mb)` | no |
//! | crashes or is killed from outside | `the parser crashed (signal 9)` | yes, up to the attempts |
//!
//! The worker's directory is removed when the call ends, however it ends (also when the
//! generation awaiting it is killed: the child is killed with it).

pub mod confine;
pub mod protocol;
pub mod worker;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use memvault_pipelines::model::{PageImage, Parsed, SourceKind};
use memvault_pipelines::parse::ParseLimits;
use memvault_pipelines::pipeline::{Decoder, PhaseError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use protocol::{
    read_frame, Envelope, FrameError, Hello, ParsedHead, Refusal, Request, DONE, HELLO, KIND,
    PARSED, REFUSED, TEXT, WORKER_ARG,
};

/// The limits of one worker, each a setting (`[worker]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerLimits {
    /// Address space, bytes (`RLIMIT_AS`).
    pub memory_bytes: u64,
    /// CPU seconds (`RLIMIT_CPU`).
    pub cpu_secs: u64,
    /// Wall-clock time from start to answer; then `SIGKILL`.
    pub deadline: Duration,
    /// Bytes handed back (text and images), and bytes it may write to its directory.
    pub output_bytes: u64,
}

impl Default for WorkerLimits {
    fn default() -> Self {
        WorkerLimits {
            memory_bytes: 1024 * 1024 * 1024,
            cpu_secs: 60,
            deadline: Duration::from_secs(120),
            output_bytes: 64 * 1024 * 1024,
        }
    }
}

/// How the server starts its workers.
#[derive(Debug, Clone)]
pub struct WorkersConfig {
    /// The memvault binary (the server's own executable, unless the embedding program is not
    /// memvault: the test suite and the benchmarks name it).
    pub program: PathBuf,
    /// Where each worker's own directory is made.
    pub dir: PathBuf,
    pub limits: WorkerLimits,
    /// The parsers' own limits, checked before a library allocates.
    pub parse_limits: ParseLimits,
    pub ocr_language: String,
    pub ocr_data_dir: Option<String>,
    /// Landlock and seccomp (off only where a kernel misbehaves with them).
    pub confine: bool,
    /// Obey test-only fault inputs (the test suite only).
    pub faults: bool,
    /// Workers started ahead of need, each waiting for its one request (0: start each when
    /// it is needed).
    pub warm: usize,
}

/// Starts a worker per decoder call.
pub struct Workers {
    config: Arc<WorkersConfig>,
    /// Started workers waiting for their request: a process start (loading the binary and its
    /// libraries) is paid ahead of need, off a document's path. Each still serves one request
    /// only, and holds nothing of anyone until it gets it.
    warm: Arc<Mutex<Vec<Started>>>,
    /// Type checks run on an upload's request, outside the ingestion's slots: at most this
    /// many at once, the others wait their turn (so uploads cannot start workers without end).
    sniffs: tokio::sync::Semaphore,
    /// A degraded confinement is logged once per process.
    warned: AtomicBool,
}

/// Type checks (`Decoder::sniff`) running at once, all uploads together.
const SNIFFS_AT_ONCE: usize = 2;

/// A worker process, started in its own directory, waiting for its envelope.
struct Started {
    child: tokio::process::Child,
    dir: tempfile::TempDir,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
    stderr: tokio::process::ChildStderr,
}

/// What a finished worker handed back: its frames, tag and payload, in order.
type Frames = Vec<(u8, Vec<u8>)>;

/// Why the server stopped a worker itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    Deadline,
    Output,
}

/// How a worker process ended, as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Exit {
    code: Option<i32>,
    signal: Option<i32>,
    stopped: Option<Stopped>,
    /// The end of what it wrote on stderr.
    stderr: String,
}

/// The last bytes of stderr kept for the diagnosis.
const STDERR_TAIL: usize = 8 * 1024;

impl Workers {
    pub fn new(config: WorkersConfig) -> std::io::Result<Arc<Self>> {
        std::fs::create_dir_all(&config.dir)?;
        Ok(Arc::new(Workers {
            config: Arc::new(config),
            warm: Arc::new(Mutex::new(Vec::new())),
            sniffs: tokio::sync::Semaphore::new(SNIFFS_AT_ONCE),
            warned: AtomicBool::new(false),
        }))
    }

    /// Starts a worker process in a new directory of its own.
    fn start(config: &WorkersConfig) -> Result<Started, PhaseError> {
        let dir = tempfile::Builder::new()
            .prefix("worker-")
            .tempdir_in(&config.dir)
            .map_err(|e| PhaseError::Transient(format!("cannot make a worker directory: {e}")))?;
        let mut command = tokio::process::Command::new(&config.program);
        let limits = config.limits;
        let rlimits = confine::Rlimits {
            address_space: limits.memory_bytes,
            cpu_secs: limits.cpu_secs.max(1),
            file_size: limits.output_bytes,
            open_files: confine::OPEN_FILES,
        };
        command
            .arg(WORKER_ARG)
            .args(rlimits.to_args())
            .current_dir(dir.path())
            .env_clear()
            .envs(worker_env(dir.path()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| PhaseError::Transient(format!("cannot start a worker: {e}")))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(PhaseError::Transient("a worker has no pipes".to_string()));
        };
        Ok(Started {
            child,
            dir,
            stdin,
            stdout,
            stderr,
        })
    }

    /// A started worker: a warm one that is still alive, else a new one. The waiting ones are
    /// made up to `warm` again in the background.
    fn take(&self) -> Result<Started, PhaseError> {
        let warm = {
            let mut pool = self.warm.lock().unwrap_or_else(|e| e.into_inner());
            let mut found = None;
            while let Some(mut started) = pool.pop() {
                // One that died while it waited (killed from outside) is dropped.
                if matches!(started.child.try_wait(), Ok(None)) {
                    found = Some(started);
                    break;
                }
            }
            found
        };
        if self.config.warm > 0 {
            let (config, pool) = (self.config.clone(), self.warm.clone());
            tokio::spawn(async move {
                // Back up to `warm` waiting workers.
                while pool.lock().is_ok_and(|p| p.len() < config.warm) {
                    match Workers::start(&config) {
                        Ok(started) => {
                            let mut pool = pool.lock().unwrap_or_else(|e| e.into_inner());
                            if pool.len() >= config.warm {
                                break;
                            }
                            pool.push(started);
                        }
                        Err(error) => {
                            tracing::warn!(%error, "cannot start a warm worker");
                            break;
                        }
                    }
                }
            });
        }
        match warm {
            Some(started) => Ok(started),
            None => Workers::start(&self.config),
        }
    }

    /// Runs `request` on a worker with `input` written into its directory, and collects its
    /// frames. `what` names it in messages (`the parser`, `ocr`).
    async fn run(&self, what: &str, request: Request, input: &[u8]) -> Result<Frames, PhaseError> {
        let limits = self.config.limits;
        let envelope = Envelope {
            request,
            confine: self.config.confine,
            faults: self.config.faults,
        };
        let envelope = serde_json::to_vec(&envelope)
            .map_err(|e| PhaseError::Transient(format!("cannot encode a worker request: {e}")))?;
        let Started {
            mut child,
            dir,
            mut stdin,
            mut stdout,
            mut stderr,
        } = self.take()?;
        // The worker reads its input only once its envelope has come.
        tokio::fs::write(dir.path().join(protocol::INPUT_FILE), input)
            .await
            .map_err(|e| PhaseError::Transient(format!("cannot write a worker's input: {e}")))?;
        let started = Instant::now();

        let stderr_tail = tokio::spawn(async move {
            let mut tail = Vec::new();
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buffer).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&buffer[..n]);
                if tail.len() > STDERR_TAIL {
                    tail.drain(..tail.len() - STDERR_TAIL);
                }
            }
            crate::loggable::loggable_up_to(&String::from_utf8_lossy(&tail), STDERR_TAIL)
        });

        let talk = async {
            // The envelope is small and the worker reads it whole before anything else; a
            // worker that died at once shows in its exit, not here.
            let _ = stdin.write_all(&envelope).await;
            drop(stdin);
            let mut budget = limits.output_bytes;
            let mut frames = Vec::new();
            loop {
                match read_frame(&mut stdout, &mut budget).await {
                    Ok(Some(frame)) => frames.push(frame),
                    Ok(None) => return Ok(frames),
                    Err(FrameError::OverBudget) => return Err(Stopped::Output),
                    // A cut stream: the exit tells why.
                    Err(_) => return Ok(frames),
                }
            }
        };
        let outcome = match tokio::time::timeout(limits.deadline, talk).await {
            Ok(Ok(frames)) => Ok(frames),
            Ok(Err(stopped)) => Err(stopped),
            Err(_) => Err(Stopped::Deadline),
        };
        if outcome.is_err() {
            let _ = child.start_kill();
        }
        // After stdout closed, the exit follows at once; the wait is bounded all the same.
        let status = match tokio::time::timeout(Duration::from_secs(5), child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => {
                let _ = child.start_kill();
                child.wait().await.ok()
            }
        };
        let stderr = tokio::time::timeout(Duration::from_secs(1), stderr_tail)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        tracing::debug!(
            worker = what,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "worker ended"
        );
        let exit = Exit {
            code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s)),
            stopped: outcome.as_ref().err().copied(),
            stderr,
        };
        let frames = outcome.unwrap_or_default();
        drop(dir);
        let clean = frames.last().is_some_and(|(tag, _)| *tag == DONE) && exit.code == Some(0);
        if !clean {
            if !exit.stderr.trim().is_empty() {
                tracing::warn!(worker = what, stderr = %exit.stderr.trim(), "worker stderr");
            }
            return Err(verdict(what, &limits, &exit));
        }
        self.check_hello(&frames);
        Ok(frames)
    }

    fn check_hello(&self, frames: &[(u8, Vec<u8>)]) {
        let hello = frames
            .iter()
            .find(|(tag, _)| *tag == HELLO)
            .and_then(|(_, payload)| serde_json::from_slice::<Hello>(payload).ok());
        match hello {
            Some(hello) if hello.is_complete() => {}
            Some(hello) => {
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(landlock = %hello.landlock, seccomp = %hello.seccomp, "document workers run with a weaker confinement than intended (resource limits still hold)");
                }
            }
            None => tracing::warn!("a worker answered without saying how it is confined"),
        }
    }
}

/// The environment a worker starts with: nothing of the server's (no secrets), only what the
/// decoders read.
fn worker_env(dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        // Tesseract's OpenMP threads fight over the cores; one thread per recognition is
        // several times faster on small machines.
        ("OMP_THREAD_LIMIT", "1".to_string()),
        ("TMPDIR", dir.display().to_string()),
        ("LC_ALL", "C".to_string()),
        // mimalloc reserves its first arena as one 1 GiB mapping, which an address-space
        // limit of 1 GiB can never grant (Tesseract's first large allocation then fails);
        // smaller reservations grow as needed.
        ("MIMALLOC_ARENA_RESERVE", "64MiB".to_string()),
    ]
}

fn megabytes(bytes: u64) -> u64 {
    bytes / (1024 * 1024)
}

/// What a worker's unclean end means for the attempt.
fn verdict(what: &str, limits: &WorkerLimits, exit: &Exit) -> PhaseError {
    match exit.stopped {
        Some(Stopped::Deadline) => {
            return PhaseError::Permanent(format!(
                "{what} did not finish within its deadline ({} s, setting worker.deadline_secs)",
                limits.deadline.as_secs()
            ))
        }
        Some(Stopped::Output) => {
            return PhaseError::Permanent(format!(
                "{what} handed back more than its output limit ({} MB, setting worker.output_mb)",
                megabytes(limits.output_bytes)
            ))
        }
        None => {}
    }
    let stderr = exit.stderr.to_lowercase();
    let out_of_memory = [
        "memory allocation of",
        "out of memory",
        "cannot allocate memory",
        "bad_alloc",
    ]
    .iter()
    .any(|hint| stderr.contains(hint));
    if out_of_memory {
        return PhaseError::Permanent(format!(
            "{what} ran out of memory (limit {} MB, setting worker.memory_mb)",
            megabytes(limits.memory_bytes)
        ));
    }
    match exit.signal {
        Some(libc::SIGXCPU) => PhaseError::Permanent(format!(
            "{what} used more than its CPU time limit ({} s, setting worker.cpu_secs)",
            limits.cpu_secs
        )),
        Some(libc::SIGXFSZ) => PhaseError::Permanent(format!(
            "{what} wrote more than its output limit ({} MB, setting worker.output_mb)",
            megabytes(limits.output_bytes)
        )),
        Some(signal) => PhaseError::Transient(format!("{what} crashed ({})", signal_name(signal))),
        None => match exit.code {
            Some(0) => PhaseError::Transient(format!("{what} ended without an answer")),
            Some(code) => PhaseError::Transient(format!("{what} failed (exit code {code})")),
            None => PhaseError::Transient(format!("{what} ended in an unknown way")),
        },
    }
}

fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGKILL => "killed, signal 9",
        libc::SIGSEGV => "segmentation fault, signal 11",
        libc::SIGABRT => "aborted, signal 6",
        libc::SIGBUS => "bus error, signal 7",
        libc::SIGILL => "illegal instruction, signal 4",
        libc::SIGFPE => "arithmetic fault, signal 8",
        libc::SIGSYS => "bad system call, signal 31",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

fn payload<T: serde::de::DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, PhaseError> {
    serde_json::from_slice(bytes)
        .map_err(|e| PhaseError::Transient(format!("{what} answered in an unknown form: {e}")))
}

/// A refusal, if the worker sent one: deterministic, so never retried.
fn refusal(what: &str, frames: &[(u8, Vec<u8>)]) -> Result<(), PhaseError> {
    match frames.iter().find(|(tag, _)| *tag == REFUSED) {
        // The worker is the untrusted side: its words are cleaned before anyone logs or
        // shows them.
        Some((_, bytes)) => Err(PhaseError::Permanent(crate::loggable::loggable_up_to(
            &payload::<Refusal>(what, bytes)?.message,
            500,
        ))),
        None => Ok(()),
    }
}

#[async_trait]
impl Decoder for Workers {
    async fn parse(&self, kind: SourceKind, bytes: &[u8]) -> Result<Parsed, PhaseError> {
        const WHAT: &str = "the parser";
        let request = Request::Parse {
            kind,
            limits: self.config.parse_limits.clone(),
        };
        let frames = self.run(WHAT, request, bytes).await?;
        refusal(WHAT, &frames)?;
        let head: ParsedHead = match frames.iter().find(|(tag, _)| *tag == PARSED) {
            Some((_, bytes)) => payload(WHAT, bytes)?,
            None => return Err(PhaseError::Transient(format!("{WHAT} sent no result"))),
        };
        // The images stay in the worker; OCR reads them from the document again.
        let images = head
            .images
            .into_iter()
            .map(|image| PageImage {
                path: image.path,
                position: image.position,
                data: Vec::new(),
            })
            .collect();
        Ok(Parsed {
            sections: head.sections,
            images,
            pages: head.pages,
        })
    }

    async fn ocr(
        &self,
        kind: SourceKind,
        bytes: &[u8],
        images: Range<usize>,
    ) -> Result<Vec<Result<String, String>>, PhaseError> {
        const WHAT: &str = "ocr";
        let count = images.len();
        let request = Request::Ocr {
            kind,
            limits: self.config.parse_limits.clone(),
            first: images.start,
            count,
            language: self.config.ocr_language.clone(),
            data_dir: self.config.ocr_data_dir.clone(),
        };
        let frames = self.run(WHAT, request, bytes).await?;
        refusal(WHAT, &frames)?;
        let texts = frames
            .iter()
            .filter(|(tag, _)| *tag == TEXT)
            .map(|(_, bytes)| payload::<Result<String, String>>(WHAT, bytes))
            .collect::<Result<Vec<_>, _>>()?;
        if texts.len() != count {
            return Err(PhaseError::Transient(format!(
                "{WHAT} sent {} answers for {count} images",
                texts.len()
            )));
        }
        Ok(texts)
    }

    async fn sniff(&self, bytes: &[u8]) -> Result<Option<SourceKind>, PhaseError> {
        const WHAT: &str = "the file type check";
        let _turn = self
            .sniffs
            .acquire()
            .await
            .map_err(|_| PhaseError::Transient(format!("{WHAT} is shutting down")))?;
        let frames = self.run(WHAT, Request::Sniff, bytes).await?;
        match frames.iter().find(|(tag, _)| *tag == KIND) {
            Some((_, bytes)) => payload(WHAT, bytes),
            None => Err(PhaseError::Transient(format!("{WHAT} sent no answer"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exit(signal: Option<i32>, code: Option<i32>, stderr: &str) -> Exit {
        Exit {
            code,
            signal,
            stopped: None,
            stderr: stderr.to_string(),
        }
    }

    #[test]
    fn limits_are_named_and_refusals_are_not_retried() {
        let limits = WorkerLimits::default();
        let oom = verdict(
            "the parser",
            &limits,
            &exit(
                Some(libc::SIGABRT),
                None,
                "memory allocation of 11258827267113000 bytes failed\n",
            ),
        );
        assert_eq!(
            oom,
            PhaseError::Permanent(
                "the parser ran out of memory (limit 1024 MB, setting worker.memory_mb)".into()
            )
        );
        let cpu = verdict("ocr", &limits, &exit(Some(libc::SIGXCPU), None, ""));
        assert_eq!(
            cpu,
            PhaseError::Permanent(
                "ocr used more than its CPU time limit (60 s, setting worker.cpu_secs)".into()
            )
        );
        let late = verdict(
            "the parser",
            &limits,
            &Exit {
                stopped: Some(Stopped::Deadline),
                ..exit(Some(libc::SIGKILL), None, "")
            },
        );
        assert!(
            matches!(&late, PhaseError::Permanent(m) if m.contains("deadline (120 s")),
            "{late:?}"
        );
        let flood = verdict(
            "the parser",
            &limits,
            &Exit {
                stopped: Some(Stopped::Output),
                ..exit(Some(libc::SIGKILL), None, "")
            },
        );
        assert!(
            matches!(&flood, PhaseError::Permanent(m) if m.contains("output limit (64 MB")),
            "{flood:?}"
        );
    }

    #[test]
    fn crashes_and_outside_kills_are_retried() {
        let limits = WorkerLimits::default();
        for (signal, name) in [
            (libc::SIGKILL, "killed"),
            (libc::SIGSEGV, "segmentation fault"),
            (libc::SIGABRT, "aborted"),
        ] {
            let error = verdict("the parser", &limits, &exit(Some(signal), None, ""));
            assert!(
                matches!(&error, PhaseError::Transient(m) if m.contains(name)),
                "{error:?}"
            );
        }
        let error = verdict("the parser", &limits, &exit(None, Some(2), "bad envelope"));
        assert_eq!(
            error,
            PhaseError::Transient("the parser failed (exit code 2)".into())
        );
    }

    #[test]
    fn the_environment_carries_no_secret() {
        let env = worker_env(Path::new("/tmp/w"));
        let names: Vec<&str> = env.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            names,
            vec![
                "OMP_THREAD_LIMIT",
                "TMPDIR",
                "LC_ALL",
                "MIMALLOC_ARENA_RESERVE"
            ]
        );
    }
}
