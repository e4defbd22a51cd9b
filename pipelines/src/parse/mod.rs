//! File bytes -> [`crate::model::Parsed`] text sections.
//!
//! [`parse`] dispatches on the [`SourceKind`] to one parser per format, each in its own module:
//!
//! - [`pdf`]: one section per page (`Page N`) from a content-stream text walker; pages without
//!   a text layer hand their scanned images to OCR.
//! - [`docx`]: paragraphs and tables of `word/document.xml`, sections by heading.
//! - [`sheet`]: XLSX, XLS and ODS through calamine, 50-row sections per sheet.
//! - [`csv`]: delimiter-sniffing CSV, 50-row sections.
//! - [`markdown`]: heading tree -> sections, markup stripped.
//! - [`html`]: the main content of a page, boilerplate dropped, sections by heading.
//! - [`text`]: UTF-8 / UTF-16 plain text as one section.
//! - [`image`]: image files, checked and passed whole to OCR.
//!
//! Every parser is synchronous and bounded by [`ParseLimits`]: pages, pixels per image and per
//! document, decompressed bytes, output text, spreadsheet cells and zip entries. Zip containers
//! are checked by [`zip_guard`] before anything reads them, and whatever a library would
//! allocate from a file's own declarations (a spreadsheet's dimensions, an image's header) is
//! checked against the limits before the library sees the file: a worker's memory limit is the
//! last line, not the first. [`parse`] never panics: a panic inside
//! a parser (a bug or a dependency's assertion on hostile input) becomes [`ParseError::Corrupt`].
//!
//! [`sniff`] guesses the kind from the bytes when neither a name nor a MIME type says it.

mod csv;
mod docx;
mod html;
mod image;
mod markdown;
mod ods_guard;
pub(crate) mod ole;
mod pdf;
mod pdf_image;
mod sheet;
mod sink;
mod text;
mod xls_guard;
mod zip_guard;

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::model::{Parsed, SourceKind};

/// Bounds on the work and memory one parse may take. A field missing from serialised limits
/// keeps its default.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ParseLimits {
    /// Pages of a PDF.
    pub max_pages: u32,
    /// Pixels (width x height) of one image.
    pub max_image_pixels: u64,
    /// Pixels of all the images of one document handed to OCR together (each image once,
    /// however many pages draw it): bounds the OCR work one document can ask for. The
    /// default, 2,000 megapixels, is about 240 letter pages scanned at 300 dpi.
    pub max_total_pixels: u64,
    /// Decompressed bytes read out of a zip container or out of a PDF's streams (its images
    /// included, whether a parse keeps their bytes or not, see [`Keep`]), in total.
    pub max_unpacked_bytes: u64,
    /// Bytes of output text.
    pub max_text_bytes: usize,
    /// Cells of a spreadsheet, all sheets together.
    pub max_cells: u64,
    /// Entries of a zip container.
    pub max_zip_entries: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            max_pages: 2000,
            max_image_pixels: 50_000_000,
            max_total_pixels: 2_000_000_000,
            max_unpacked_bytes: 256 * 1024 * 1024,
            max_text_bytes: 50 * 1024 * 1024,
            max_cells: 2_000_000,
            max_zip_entries: 10_000,
        }
    }
}

/// Why a file could not be parsed. The messages are meant for the person who uploaded it.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("the file is empty")]
    Empty,
    #[error("the file is encrypted; upload a copy without a password")]
    Encrypted,
    #[error("corrupt {kind} file: {detail}")]
    Corrupt { kind: &'static str, detail: String },
    #[error("{0}")]
    Limit(String),
    #[error("{0}")]
    Unsupported(String),
}

impl ParseError {
    pub(crate) fn corrupt(kind: &'static str, detail: impl Into<String>) -> ParseError {
        ParseError::Corrupt {
            kind,
            detail: detail.into(),
        }
    }
}

/// Parses `bytes` as `kind`.
///
/// Never panics: a panic inside a parser is caught and reported as [`ParseError::Corrupt`].
/// Memory and time are bounded by `limits`. A file that yields neither text nor images is
/// [`ParseError::Empty`].
pub fn parse(kind: SourceKind, bytes: &[u8], limits: &ParseLimits) -> Result<Parsed, ParseError> {
    parse_keeping(kind, bytes, limits, &Keep::All)
}

/// Which images of a document keep their bytes in a [`Parsed`]. Every image is found, checked
/// and counted (so the list, and each image's index in it, is the same whatever is kept); the
/// others are handed over with empty `data`. A worker parses without images to tell the
/// server where the images are, then again for each batch it recognises, so that no more than
/// a batch of decoded images is ever held at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keep {
    All,
    /// Images whose index is in the range.
    Only(std::ops::Range<usize>),
}

impl Keep {
    pub(crate) fn keeps(&self, index: usize) -> bool {
        match self {
            Keep::All => true,
            Keep::Only(range) => range.contains(&index),
        }
    }
}

/// [`parse`], keeping the bytes of the images `keep` names only.
pub fn parse_keeping(
    kind: SourceKind,
    bytes: &[u8],
    limits: &ParseLimits,
    keep: &Keep,
) -> Result<Parsed, ParseError> {
    if bytes.is_empty() {
        return Err(ParseError::Empty);
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| parse_inner(kind, bytes, limits, keep)));
    let parsed = match outcome {
        Ok(result) => result?,
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(kind = kind.as_str(), panic = %detail, "parser panicked");
            return Err(ParseError::corrupt(
                kind_name(kind),
                "the file could not be read",
            ));
        }
    };
    let has_text = parsed.sections.iter().any(|s| !s.text.trim().is_empty());
    if !has_text && parsed.images.is_empty() {
        return Err(ParseError::Empty);
    }
    Ok(parsed)
}

fn parse_inner(
    kind: SourceKind,
    bytes: &[u8],
    limits: &ParseLimits,
    keep: &Keep,
) -> Result<Parsed, ParseError> {
    match kind {
        SourceKind::Pdf => pdf::parse(bytes, limits, keep),
        SourceKind::Docx => docx::parse(bytes, limits),
        SourceKind::Xlsx | SourceKind::Xls | SourceKind::Ods => sheet::parse(kind, bytes, limits),
        SourceKind::Csv => csv::parse(bytes, limits),
        SourceKind::Markdown => markdown::parse(&text::decode(bytes), limits),
        SourceKind::Html => html::parse(&text::decode(bytes), limits),
        SourceKind::Text => text::parse(bytes, limits),
        SourceKind::Png
        | SourceKind::Jpg
        | SourceKind::Jpeg
        | SourceKind::Webp
        | SourceKind::Tiff => {
            let mut parsed = image::parse(kind, bytes, limits)?;
            for (index, image) in parsed.images.iter_mut().enumerate() {
                if !keep.keeps(index) {
                    image.data = Vec::new();
                }
            }
            Ok(parsed)
        }
    }
}

/// The name of a kind in error messages (`corrupt pdf file: ...`).
pub(crate) fn kind_name(kind: SourceKind) -> &'static str {
    match kind {
        SourceKind::Jpg => "jpeg",
        other => other.as_str(),
    }
}

/// Guesses the kind from the content: magic numbers, then zip containers by their entries,
/// then HTML by its opening tag, then text if the bytes decode. `None` otherwise.
pub fn sniff(bytes: &[u8]) -> Option<SourceKind> {
    if let Some(kind) = SourceKind::from_magic(bytes) {
        return Some(kind);
    }
    if bytes.starts_with(b"PK\x03\x04") {
        return zip_guard::sniff_container(bytes);
    }
    if html::looks_like_html(bytes) {
        return Some(SourceKind::Html);
    }
    if text::is_text(bytes) {
        return Some(SourceKind::Text);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_input_is_empty_for_every_kind() {
        for kind in SourceKind::ALL {
            let err = parse(kind, b"", &ParseLimits::default()).unwrap_err();
            assert!(matches!(err, ParseError::Empty), "{kind:?}: {err}");
        }
    }

    #[test]
    fn whitespace_only_text_is_empty() {
        let err = parse(SourceKind::Text, b"  \n\t \r\n", &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Empty), "{err}");
        let err = parse(
            SourceKind::Html,
            b"<html><body> </body></html>",
            &ParseLimits::default(),
        )
        .unwrap_err();
        assert!(matches!(err, ParseError::Empty), "{err}");
    }

    #[test]
    fn corrupt_binary_kinds_are_corrupt_not_panics() {
        let junk: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect();
        for kind in [
            SourceKind::Pdf,
            SourceKind::Docx,
            SourceKind::Xlsx,
            SourceKind::Xls,
            SourceKind::Ods,
            SourceKind::Png,
            SourceKind::Jpeg,
            SourceKind::Webp,
            SourceKind::Tiff,
        ] {
            let err = parse(kind, &junk, &ParseLimits::default()).unwrap_err();
            assert!(matches!(err, ParseError::Corrupt { .. }), "{kind:?}: {err}");
            let message = err.to_string();
            assert_eq!(message, message.to_lowercase(), "{kind:?}: {message}");
            assert!(!message.contains("Error"), "{message}");
        }
    }

    #[test]
    fn truncated_magic_is_corrupt() {
        let err = parse(
            SourceKind::Pdf,
            b"%PDF-1.7\n1 0 obj <<",
            &ParseLimits::default(),
        )
        .unwrap_err();
        assert!(matches!(err, ParseError::Corrupt { .. }), "{err}");
        let err = parse(
            SourceKind::Docx,
            b"PK\x03\x04garbage",
            &ParseLimits::default(),
        )
        .unwrap_err();
        assert!(matches!(err, ParseError::Corrupt { .. }), "{err}");
    }

    #[test]
    fn error_messages_read_well() {
        assert_eq!(ParseError::Empty.to_string(), "the file is empty");
        assert_eq!(
            ParseError::corrupt("pdf", "no pages").to_string(),
            "corrupt pdf file: no pages"
        );
    }

    #[test]
    fn limits_default_values() {
        let limits = ParseLimits::default();
        assert_eq!(limits.max_pages, 2000);
        assert_eq!(limits.max_image_pixels, 50_000_000);
        assert_eq!(limits.max_total_pixels, 2_000_000_000);
        assert_eq!(limits.max_unpacked_bytes, 268_435_456);
        assert_eq!(limits.max_text_bytes, 52_428_800);
        assert_eq!(limits.max_cells, 2_000_000);
        assert_eq!(limits.max_zip_entries, 10_000);
    }

    #[test]
    fn sniff_plain_kinds() {
        assert_eq!(sniff(b"%PDF-1.4\n"), Some(SourceKind::Pdf));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), Some(SourceKind::Png));
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some(SourceKind::Jpeg));
        assert_eq!(sniff(b"II*\0...."), Some(SourceKind::Tiff));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(SourceKind::Webp));
        assert_eq!(
            sniff(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0]),
            Some(SourceKind::Xls)
        );
        assert_eq!(
            sniff(b"\xEF\xBB\xBF  <!DOCTYPE HTML><html>"),
            Some(SourceKind::Html)
        );
        assert_eq!(sniff(b"\n<HTML lang=en>"), Some(SourceKind::Html));
        assert_eq!(sniff(b"just some words\n"), Some(SourceKind::Text));
        assert_eq!(sniff(b"\xFF\xFEh\0i\0"), Some(SourceKind::Text));
        assert_eq!(sniff(&[0x00, 0x9F, 0x92, 0x96, 0xC3]), None);
        assert_eq!(sniff(b"PK\x03\x04not a zip"), None);
    }
}
