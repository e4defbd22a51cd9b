//! The worker's side: `memvault worker`, started by the server in a directory of its own with
//! its inputs there and one [`Envelope`] on stdin. It reads its inputs, opens what it needs
//! from the system (Tesseract's language data), confines itself ([`confine::confine`]), and
//! only then decodes: parse or OCR, answering in frames on stdout (see [`protocol`]). It is
//! single-threaded and holds no secret: its environment was emptied by the server.

use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

use memvault_pipelines::parse::{self, Keep, ParseError};

use super::confine;
use super::protocol::{
    self, write_frame, write_json, Envelope, ImageHead, ParsedHead, Refusal, Request, DONE, HELLO,
    INPUT_FILE, KIND, PARSED, REFUSED, TEXT,
};
use crate::ocr::Tesseract;

/// Runs the worker; the process's exit code. A failure to read the inputs or to write the
/// answer is exit code 2 (the server reports it as a crash).
pub fn main() -> i32 {
    // The limits come first, before a byte of input is read.
    let args: Vec<String> = std::env::args().skip(2).collect();
    let Some(limits) = confine::Rlimits::from_args(&args) else {
        eprintln!("memvault worker: expected three limits (address space, cpu seconds, file size); this command is started by the server");
        return 2;
    };
    if let Err(error) = confine::limit_self(limits) {
        eprintln!("memvault worker: cannot set its limits: {error}");
        return 2;
    }
    match run() {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("memvault worker: {error}");
            2
        }
    }
}

fn run() -> io::Result<()> {
    let mut raw = Vec::new();
    io::stdin()
        .take(protocol::MAX_ENVELOPE_BYTES)
        .read_to_end(&mut raw)?;
    let envelope: Envelope = serde_json::from_slice(&raw)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("envelope: {e}")))?;
    let dir = std::env::current_dir()?;
    let mut out = BufWriter::new(io::stdout().lock());
    match envelope.request {
        Request::Parse { kind, limits } => {
            let bytes = std::fs::read(INPUT_FILE)?;
            hello(&mut out, &dir, envelope.confine)?;
            let probed = if envelope.faults {
                fault::obey(&bytes, &mut out)?
            } else {
                None
            };
            let parsed = match probed {
                Some(report) => Ok(memvault_pipelines::model::Parsed {
                    sections: vec![memvault_pipelines::model::Section {
                        path: String::new(),
                        text: report,
                    }],
                    images: Vec::new(),
                    pages: 1,
                }),
                // Where the images are is all the server needs: their bytes stay here.
                None => parse::parse_keeping(kind, &bytes, &limits, &Keep::Only(0..0)),
            };
            match parsed {
                Ok(parsed) => {
                    let head = ParsedHead {
                        sections: parsed.sections,
                        pages: parsed.pages,
                        images: parsed
                            .images
                            .iter()
                            .map(|i| ImageHead {
                                path: i.path.clone(),
                                position: i.position,
                            })
                            .collect(),
                    };
                    write_json(&mut out, PARSED, &head)?;
                }
                Err(error) => refuse(&mut out, &error)?,
            }
        }
        Request::Sniff => {
            let bytes = std::fs::read(INPUT_FILE)?;
            hello(&mut out, &dir, envelope.confine)?;
            if envelope.faults {
                let _ = fault::obey(&bytes, &mut out)?;
            }
            write_json(&mut out, KIND, &parse::sniff(&bytes))?;
        }
        Request::Ocr {
            kind,
            limits,
            first,
            count,
            language,
            data_dir,
        } => {
            let bytes = std::fs::read(INPUT_FILE)?;
            // The language data is read before the worker is confined to its directory.
            let mut tesseract = Tesseract::open(data_dir.as_deref(), &language);
            hello(&mut out, &dir, envelope.confine)?;
            if envelope.faults {
                let _ = fault::obey(&bytes, &mut out)?;
            }
            // The images are read from the document again, here: they never leave the worker.
            let end = first.saturating_add(count);
            match parse::parse_keeping(kind, &bytes, &limits, &Keep::Only(first..end)) {
                Ok(parsed) => {
                    let end = end.min(parsed.images.len());
                    for image in parsed.images.get(first..end).unwrap_or_default() {
                        let answer = match tesseract.as_mut() {
                            Ok(tesseract) => tesseract.recognize(&image.data),
                            Err(error) => Err(error.clone()),
                        };
                        write_json(&mut out, TEXT, &answer)?;
                        // Each answer leaves at once: the server sees the work move.
                        out.flush()?;
                    }
                }
                Err(error) => refuse(&mut out, &error)?,
            }
        }
    }
    write_frame(&mut out, DONE, b"")?;
    out.flush()
}

fn hello(out: &mut impl Write, dir: &Path, enabled: bool) -> io::Result<()> {
    let hello = if enabled {
        confine::confine(dir)
    } else {
        protocol::Hello {
            landlock: "none (turned off by worker.confine)".to_string(),
            seccomp: "none (turned off by worker.confine)".to_string(),
        }
    };
    write_json(out, HELLO, &hello)?;
    out.flush()
}

fn refuse(out: &mut impl Write, error: &ParseError) -> io::Result<()> {
    write_json(
        out,
        REFUSED,
        &Refusal {
            message: error.to_string(),
        },
    )
}

/// Test-only behaviours, obeyed only when the server was started by the test suite with worker
/// faults on (never from a setting): an input that starts with `MEMVAULT-TEST-FAULT:` followed
/// by a fault's name makes the worker misbehave in that way, so that the suite can prove the
/// server survives it.
mod fault {
    use std::io::{self, Write};

    use super::super::protocol::TEXT;

    const PREFIX: &[u8] = b"MEMVAULT-TEST-FAULT:";

    /// Misbehaves as `input` asks; `Some(report)` for `probe`, which reports what the
    /// confinement lets through instead of parsing.
    pub(super) fn obey(input: &[u8], out: &mut impl Write) -> io::Result<Option<String>> {
        let Some(rest) = input.strip_prefix(PREFIX) else {
            return Ok(None);
        };
        let name = rest
            .split(|b| b.is_ascii_whitespace())
            .next()
            .unwrap_or_default();
        match name {
            // A crash, as a decoder's bug would make one.
            b"abort" => std::process::abort(),
            // Memory until the limit stops it.
            b"oom" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 64 * 1024 * 1024]);
                }
            }
            // CPU until the limit stops it.
            b"spin" => {
                let mut x = 0u64;
                loop {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            }
            // Nothing, until the deadline.
            b"sleep" => loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            },
            // Output without end.
            b"flood" => {
                let block = vec![b'x'; 1024 * 1024];
                loop {
                    super::super::protocol::write_frame(out, TEXT, &block)?;
                }
            }
            b"probe" => {
                let network = match std::net::TcpStream::connect(("127.0.0.1", 5432)) {
                    Ok(_) => "network: open".to_string(),
                    Err(e) => format!("network: denied ({e})"),
                };
                let files = match std::fs::read("/etc/hostname") {
                    Ok(_) => "files: open".to_string(),
                    Err(e) => format!("files: denied ({e})"),
                };
                let exec = match std::process::Command::new("/bin/true").status() {
                    Ok(_) => "exec: open".to_string(),
                    Err(e) => format!("exec: denied ({e})"),
                };
                let mut env: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
                env.sort();
                Ok(Some(format!(
                    "Probe report.\n\n{network}\n\n{files}\n\n{exec}\n\nenv: {}",
                    env.join(" ")
                )))
            }
            _ => Ok(None),
        }
    }
}
