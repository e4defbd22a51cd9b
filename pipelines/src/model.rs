//! Types shared by the parsers, the pipeline and the server.

use serde::{Deserialize, Serialize};

/// The format of a document's bytes, as the parsers know them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    Pdf,
    Markdown,
    Text,
    Docx,
    Html,
    Csv,
    Xlsx,
    Xls,
    Ods,
    Png,
    Jpg,
    Jpeg,
    Webp,
    Tiff,
}

impl SourceKind {
    pub const ALL: [SourceKind; 14] = [
        SourceKind::Pdf,
        SourceKind::Markdown,
        SourceKind::Text,
        SourceKind::Docx,
        SourceKind::Html,
        SourceKind::Csv,
        SourceKind::Xlsx,
        SourceKind::Xls,
        SourceKind::Ods,
        SourceKind::Png,
        SourceKind::Jpg,
        SourceKind::Jpeg,
        SourceKind::Webp,
        SourceKind::Tiff,
    ];

    /// The API's name of the kind (`sourceType`).
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Pdf => "pdf",
            SourceKind::Markdown => "markdown",
            SourceKind::Text => "text",
            SourceKind::Docx => "docx",
            SourceKind::Html => "html",
            SourceKind::Csv => "csv",
            SourceKind::Xlsx => "xlsx",
            SourceKind::Xls => "xls",
            SourceKind::Ods => "ods",
            SourceKind::Png => "png",
            SourceKind::Jpg => "jpg",
            SourceKind::Jpeg => "jpeg",
            SourceKind::Webp => "webp",
            SourceKind::Tiff => "tiff",
        }
    }

    /// From the API's name (`sourceType`); `md` and `txt` are accepted as aliases.
    pub fn parse(value: &str) -> Option<SourceKind> {
        let value = value.trim().to_ascii_lowercase();
        match value.as_str() {
            "md" => return Some(SourceKind::Markdown),
            "txt" => return Some(SourceKind::Text),
            "tif" => return Some(SourceKind::Tiff),
            _ => {}
        }
        SourceKind::ALL.into_iter().find(|k| k.as_str() == value)
    }

    /// From a file name's extension.
    pub fn from_file_name(name: &str) -> Option<SourceKind> {
        let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
        match ext.as_str() {
            "markdown" | "md" | "mdx" => Some(SourceKind::Markdown),
            "txt" | "text" | "log" => Some(SourceKind::Text),
            "htm" | "html" | "xhtml" => Some(SourceKind::Html),
            "tif" | "tiff" => Some(SourceKind::Tiff),
            other => SourceKind::parse(other),
        }
    }

    /// From a MIME type (`Content-Type`, parameters ignored).
    pub fn from_mime(mime: &str) -> Option<SourceKind> {
        let mime = mime.split(';').next()?.trim().to_ascii_lowercase();
        match mime.as_str() {
            "application/pdf" => Some(SourceKind::Pdf),
            "text/markdown" | "text/x-markdown" => Some(SourceKind::Markdown),
            "text/plain" => Some(SourceKind::Text),
            "text/html" | "application/xhtml+xml" => Some(SourceKind::Html),
            "text/csv" => Some(SourceKind::Csv),
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => {
                Some(SourceKind::Docx)
            }
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => {
                Some(SourceKind::Xlsx)
            }
            "application/vnd.ms-excel" => Some(SourceKind::Xls),
            "application/vnd.oasis.opendocument.spreadsheet" => Some(SourceKind::Ods),
            "image/png" => Some(SourceKind::Png),
            "image/jpeg" | "image/jpg" => Some(SourceKind::Jpeg),
            "image/webp" => Some(SourceKind::Webp),
            "image/tiff" => Some(SourceKind::Tiff),
            _ => None,
        }
    }

    /// From the bytes' magic numbers, for the formats that have them. Zip containers (DOCX,
    /// XLSX, ODS) are told apart by their entries, which [`crate::parse::sniff`] reads.
    pub fn from_magic(bytes: &[u8]) -> Option<SourceKind> {
        if bytes.starts_with(b"%PDF-") {
            Some(SourceKind::Pdf)
        } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(SourceKind::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(SourceKind::Jpeg)
        } else if bytes.len() >= 12 && &bytes[0..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(SourceKind::Webp)
        } else if bytes.starts_with(b"II*\0") || bytes.starts_with(b"MM\0*") {
            Some(SourceKind::Tiff)
        } else if bytes.starts_with(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) {
            Some(SourceKind::Xls)
        } else {
            None
        }
    }

    /// Images go to OCR whole.
    pub fn is_image(self) -> bool {
        matches!(
            self,
            SourceKind::Png
                | SourceKind::Jpg
                | SourceKind::Jpeg
                | SourceKind::Webp
                | SourceKind::Tiff
        )
    }

    /// Binary formats (an `extractedText` override applies to them).
    pub fn is_binary(self) -> bool {
        !matches!(
            self,
            SourceKind::Markdown | SourceKind::Text | SourceKind::Html | SourceKind::Csv
        )
    }
}

/// A run of text at one place in a document's structure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Section {
    /// Where it sits, outermost first, joined with ` > ` (`Page 3`, `Setup > Linux`,
    /// `Sheet1 > Rows 2-40`). Empty for a document without structure.
    pub path: String,
    /// The text: paragraphs separated by blank lines, no markup.
    pub text: String,
}

/// An image that needs OCR, encoded in a format Leptonica reads (PNG, JPEG, TIFF, PNM, WebP).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageImage {
    /// The section path its text belongs to (`Page 3`, or empty for an image file).
    pub path: String,
    /// Position among the sections: the OCR text is inserted before `sections[position]`
    /// (`sections.len()` appends), so that page order is kept.
    pub position: usize,
    pub data: Vec<u8>,
}

/// What a parser makes of a file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parsed {
    pub sections: Vec<Section>,
    /// Images whose text must come from OCR (image files, PDF pages without a text layer).
    pub images: Vec<PageImage>,
    /// Pages (PDF), sheets (spreadsheets) or 1.
    pub pages: u32,
}

/// One chunk as the chunker makes it, before it is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkDraft {
    /// 0-based position in the document.
    pub index: u32,
    pub section_path: String,
    /// The chunk's own text, as found in the document (sentences kept whole).
    pub content: String,
    /// What is embedded and indexed: the title and section path, then the content.
    pub contextual_content: String,
}

/// One atomic fact found in a chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactDraft {
    /// The memory's text: a standalone statement.
    pub content: String,
    /// `fact`, `preference`, `decision` or `context`.
    pub category: String,
    /// The evidence: an exact substring of the chunk's content.
    pub quote: String,
    /// In [0, 1].
    pub confidence: f32,
}
