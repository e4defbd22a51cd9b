//! What passes between the server and a worker.
//!
//! The server writes the document into the worker's own directory ([`INPUT_FILE`]), starts
//! `memvault worker` there and writes one JSON [`Envelope`] on its stdin. The worker answers on stdout with frames: one tag byte, a
//! little-endian `u32` length, the payload. In order:
//!
//! - [`HELLO`]: JSON [`Hello`], the confinement in force (sent once confined, before any
//!   untrusted byte is decoded);
//! - for a parse: [`PARSED`] (JSON [`ParsedHead`]: the sections and the images' places; the
//!   images themselves stay in the worker);
//! - for OCR: the worker parses the document again and recognises the images asked for, one
//!   [`TEXT`] frame per image (JSON `{"Ok": text}` or `{"Err": reason}`);
//! - for a sniff: [`KIND`] (JSON: a kind's name, or `null`);
//! - or, instead of a result, [`REFUSED`] (JSON [`Refusal`]): the input was refused (corrupt,
//!   encrypted, over a parser's limit). Refusals are deterministic and never retried;
//! - [`DONE`], empty: the worker finished cleanly.
//!
//! The server counts every byte it reads against the output limit and stops reading (and kills
//! the worker) past it, so a frame's declared length is never trusted for an allocation.

use std::io::{self, Write};

use memvault_pipelines::model::{Section, SourceKind};
use memvault_pipelines::parse::ParseLimits;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The first argument that makes the binary a worker.
pub const WORKER_ARG: &str = "worker";

/// The document's bytes, in the worker's directory.
pub const INPUT_FILE: &str = "input";

pub const HELLO: u8 = b'H';
pub const PARSED: u8 = b'P';
pub const TEXT: u8 = b'T';
pub const KIND: u8 = b'K';
pub const REFUSED: u8 = b'E';
pub const DONE: u8 = b'D';

/// The largest envelope a worker reads from its stdin.
pub const MAX_ENVELOPE_BYTES: u64 = 64 * 1024;

/// One piece of work.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "task", rename_all = "snake_case")]
pub enum Request {
    /// Parse [`INPUT_FILE`] as `kind`.
    Parse {
        kind: SourceKind,
        limits: ParseLimits,
    },
    /// Tell the kind of [`INPUT_FILE`] from its content.
    Sniff,
    /// Parse [`INPUT_FILE`] as `kind` and recognise the text of its images `first` to
    /// `first + count` (exclusive).
    Ocr {
        kind: SourceKind,
        limits: ParseLimits,
        first: usize,
        count: usize,
        language: String,
        data_dir: Option<String>,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope {
    pub request: Request,
    /// Confine the worker (Landlock, seccomp) before it decodes anything.
    pub confine: bool,
    /// Obey the test-only fault inputs (see `worker::fault`): set only by the test suite.
    pub faults: bool,
}

/// The confinement a worker runs under, as it found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// `full`, `partial (...)`, or `none (...)` with the reason.
    pub landlock: String,
    /// `on`, or `none (...)` with the reason.
    pub seccomp: String,
}

impl Hello {
    pub fn is_complete(&self) -> bool {
        self.landlock == "full" && self.seccomp == "on"
    }
}

/// Where an image's text goes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImageHead {
    pub path: String,
    pub position: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ParsedHead {
    pub sections: Vec<Section>,
    pub pages: u32,
    pub images: Vec<ImageHead>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Refusal {
    pub message: String,
}

/// Writes one frame.
pub fn write_frame(out: &mut impl Write, tag: u8, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too long"))?;
    out.write_all(&[tag])?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(payload)
}

/// Writes one JSON frame.
pub fn write_json(out: &mut impl Write, tag: u8, value: &impl Serialize) -> io::Result<()> {
    let payload = serde_json::to_vec(value).map_err(io::Error::other)?;
    write_frame(out, tag, &payload)
}

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// More output than the budget left.
    #[error("output over its limit")]
    OverBudget,
    /// The stream ended inside a frame.
    #[error("truncated frame")]
    Truncated,
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Reads the next frame, charging its header and payload to `budget`; `Ok(None)` at a clean
/// end of the stream.
pub async fn read_frame(
    input: &mut (impl AsyncRead + Unpin),
    budget: &mut u64,
) -> Result<Option<(u8, Vec<u8>)>, FrameError> {
    let mut header = [0u8; 5];
    let mut filled = 0;
    while filled < header.len() {
        let n = input.read(&mut header[filled..]).await?;
        if n == 0 {
            return if filled == 0 {
                Ok(None)
            } else {
                Err(FrameError::Truncated)
            };
        }
        filled += n;
    }
    let len = u64::from(u32::from_le_bytes([
        header[1], header[2], header[3], header[4],
    ]));
    let cost = len + header.len() as u64;
    if cost > *budget {
        return Err(FrameError::OverBudget);
    }
    *budget -= cost;
    let mut payload = vec![0u8; len as usize];
    input
        .read_exact(&mut payload)
        .await
        .map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => FrameError::Truncated,
            _ => FrameError::Io(e),
        })?;
    Ok(Some((header[0], payload)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_and_are_charged_to_the_budget() {
        let mut out = Vec::new();
        write_frame(&mut out, TEXT, b"hello").unwrap();
        write_json(
            &mut out,
            REFUSED,
            &Refusal {
                message: "no".into(),
            },
        )
        .unwrap();
        write_frame(&mut out, DONE, b"").unwrap();
        let total = out.len() as u64;
        let mut input = out.as_slice();
        let mut budget = total;
        assert_eq!(
            read_frame(&mut input, &mut budget).await.unwrap(),
            Some((TEXT, b"hello".to_vec()))
        );
        let (tag, payload) = read_frame(&mut input, &mut budget).await.unwrap().unwrap();
        assert_eq!(tag, REFUSED);
        let refusal: Refusal = serde_json::from_slice(&payload).unwrap();
        assert_eq!(refusal.message, "no");
        assert_eq!(
            read_frame(&mut input, &mut budget).await.unwrap(),
            Some((DONE, Vec::new()))
        );
        assert_eq!(budget, 0);
        assert_eq!(read_frame(&mut input, &mut budget).await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_frame_over_the_budget_is_refused_before_it_is_read() {
        // A header that claims 4 GiB: refused without allocating it.
        let mut input: &[u8] = &[PARSED, 0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3];
        let mut budget = 1024;
        assert!(matches!(
            read_frame(&mut input, &mut budget).await,
            Err(FrameError::OverBudget)
        ));
    }

    #[tokio::test]
    async fn a_stream_cut_inside_a_frame_is_truncated() {
        let mut input: &[u8] = &[TEXT, 10, 0, 0, 0, b'a'];
        let mut budget = 1024;
        assert!(matches!(
            read_frame(&mut input, &mut budget).await,
            Err(FrameError::Truncated)
        ));
        let mut input: &[u8] = &[TEXT, 10];
        assert!(matches!(
            read_frame(&mut input, &mut budget).await,
            Err(FrameError::Truncated)
        ));
    }
}
