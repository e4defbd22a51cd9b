//! Zip containers (DOCX, XLSX, ODS) are checked here before anything decompresses them: at most
//! [`ParseLimits::max_zip_entries`] entries, declared uncompressed sizes summing to at most
//! [`ParseLimits::max_unpacked_bytes`], and no entry with an absurd compression ratio (over
//! 200x while over 10 MiB). Entries read by our own parsers go through [`Container::read`],
//! which reads through `take` no further than the entry's declared size (and the budget), so
//! that a header lying about its size cannot blow memory.
//!
//! Encrypted OOXML files are not zips at all but OLE compound files holding an
//! `EncryptedPackage` stream; [`is_encrypted_ooxml`] spots them.

use std::io::{Cursor, Read};

use zip::ZipArchive;

use super::{ParseError, ParseLimits};
use crate::model::SourceKind;

const MAX_RATIO: u64 = 200;
const RATIO_FLOOR: u64 = 10 * 1024 * 1024;
const OLE_MAGIC: [u8; 8] = [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];

/// An archive that passed the checks, with what is left of the decompression budget.
pub(crate) struct Container<'a> {
    archive: ZipArchive<Cursor<&'a [u8]>>,
    budget: u64,
    /// The whole budget, for messages.
    limit: u64,
    kind: &'static str,
}

impl<'a> Container<'a> {
    /// Opens and checks the archive; `kind` names the format in error messages.
    pub(crate) fn open(
        bytes: &'a [u8],
        limits: &ParseLimits,
        kind: &'static str,
    ) -> Result<Container<'a>, ParseError> {
        let mut archive = ZipArchive::new(Cursor::new(bytes))
            .map_err(|_| ParseError::corrupt(kind, "not a readable zip archive"))?;
        check(&mut archive, limits, kind)?;
        Ok(Container {
            archive,
            budget: limits.max_unpacked_bytes,
            limit: limits.max_unpacked_bytes,
            kind,
        })
    }

    /// Whether the archive has an entry of this name.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.archive.index_for_name(name).is_some()
    }

    /// Reads an entry as text (invalid UTF-8 replaced), `None` when it is absent. The bytes
    /// count against the decompression budget.
    pub(crate) fn read(&mut self, name: &str) -> Result<Option<String>, ParseError> {
        let kind = self.kind;
        let Some(index) = self.archive.index_for_name(name) else {
            return Ok(None);
        };
        let entry = self
            .archive
            .by_index(index)
            .map_err(|_| ParseError::corrupt(kind, format!("the entry {name} cannot be read")))?;
        let declared = entry.size();
        let allowed = declared.min(self.budget);
        let mut data = Vec::new();
        entry
            .take(allowed.saturating_add(1))
            .read_to_end(&mut data)
            .map_err(|_| ParseError::corrupt(kind, format!("the entry {name} is damaged")))?;
        if data.len() as u64 > self.budget {
            return Err(unpacked_limit(kind, self.limit));
        }
        if data.len() as u64 > declared {
            return Err(larger_than_declared(kind, declared));
        }
        self.budget -= data.len() as u64;
        Ok(Some(match String::from_utf8(data) {
            Ok(text) => text,
            Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
        }))
    }
}

fn unpacked_limit(kind: &str, limit: u64) -> ParseError {
    ParseError::Limit(format!(
        "the {kind} file unpacks to more than the limit of {limit} bytes"
    ))
}

fn larger_than_declared(kind: &str, declared: u64) -> ParseError {
    ParseError::Limit(format!(
        "the {kind} file has an entry that unpacks to more than the {declared} bytes its \
         header declares, the limit for that entry"
    ))
}

fn check(
    archive: &mut ZipArchive<Cursor<&[u8]>>,
    limits: &ParseLimits,
    kind: &'static str,
) -> Result<(), ParseError> {
    let entries = archive.len();
    if entries > limits.max_zip_entries {
        return Err(ParseError::Limit(format!(
            "the {kind} file has {entries} zip entries; the limit is {}",
            limits.max_zip_entries
        )));
    }
    let mut total: u64 = 0;
    for index in 0..entries {
        let entry = archive
            .by_index_raw(index)
            .map_err(|_| ParseError::corrupt(kind, "the zip directory is damaged"))?;
        let size = entry.size();
        let compressed = entry.compressed_size().max(1);
        if size > RATIO_FLOOR && size / compressed > MAX_RATIO {
            tracing::warn!(kind, entry = index, size, compressed, "zip bomb refused");
            return Err(ParseError::Limit(format!(
                "the {kind} file has an entry that unpacks {}x its size; the limit is {MAX_RATIO}x",
                size / compressed
            )));
        }
        total = total.saturating_add(size);
    }
    if total > limits.max_unpacked_bytes {
        tracing::warn!(kind, total, "zip container too large unpacked");
        return Err(unpacked_limit(kind, limits.max_unpacked_bytes));
    }
    Ok(())
}

/// Inflates every entry to nowhere, checking that none is bigger than its header declares and
/// that all of them fit the decompression budget. For containers that another crate reads.
pub(crate) fn verify_sizes(
    bytes: &[u8],
    limits: &ParseLimits,
    kind: &'static str,
) -> Result<(), ParseError> {
    let mut container = Container::open(bytes, limits, kind)?;
    for index in 0..container.archive.len() {
        let entry = container
            .archive
            .by_index(index)
            .map_err(|_| ParseError::corrupt(kind, "a zip entry cannot be read"))?;
        let declared = entry.size();
        let allowed = declared.min(container.budget);
        let read = std::io::copy(
            &mut entry.take(allowed.saturating_add(1)),
            &mut std::io::sink(),
        )
        .map_err(|_| ParseError::corrupt(kind, "a zip entry is damaged"))?;
        if read > allowed {
            tracing::warn!(
                kind,
                entry = index,
                declared,
                "zip entry larger than declared"
            );
            return Err(if read > declared {
                larger_than_declared(kind, declared)
            } else {
                unpacked_limit(kind, container.limit)
            });
        }
        container.budget -= read;
    }
    Ok(())
}

/// DOCX, XLSX or ODS by the archive's entries; `None` for any other zip or a broken one.
pub(crate) fn sniff_container(bytes: &[u8]) -> Option<SourceKind> {
    let limits = ParseLimits::default();
    let mut container = Container::open(bytes, &limits, "zip").ok()?;
    if container.has("word/document.xml") {
        return Some(SourceKind::Docx);
    }
    if container.has("xl/workbook.xml") {
        return Some(SourceKind::Xlsx);
    }
    if container.has("mimetype") {
        container.budget = 1024;
        let mimetype = container.read("mimetype").ok()??;
        if mimetype
            .trim()
            .starts_with("application/vnd.oasis.opendocument.spreadsheet")
        {
            return Some(SourceKind::Ods);
        }
    }
    None
}

/// Whether these are the bytes of a password-protected Office file (an OLE compound file with
/// an `EncryptedPackage` stream).
pub(crate) fn is_encrypted_ooxml(bytes: &[u8]) -> bool {
    const NAME: &[u8] = b"E\0n\0c\0r\0y\0p\0t\0e\0d\0P\0a\0c\0k\0a\0g\0e\0";
    is_ole(bytes) && bytes.windows(NAME.len()).any(|w| w == NAME)
}

pub(crate) fn is_ole(bytes: &[u8]) -> bool {
    bytes.starts_with(&OLE_MAGIC)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::io::Write;

    use zip::write::SimpleFileOptions;
    use zip::{CompressionMethod, ZipWriter};

    use super::*;

    /// Writes a zip of `(name, content)` entries, deflated.
    pub(crate) fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
        let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
        for (name, content) in entries {
            writer.start_file(*name, options).unwrap();
            writer.write_all(content).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    /// A zip whose `entry` holds `megabytes` MiB of zeros, streamed through the deflater.
    pub(crate) fn zeros_bomb(entry: &str, megabytes: usize, extra: &[(&str, &[u8])]) -> Vec<u8> {
        let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .large_file(true);
        for (name, content) in extra {
            writer.start_file(*name, options).unwrap();
            writer.write_all(content).unwrap();
        }
        writer.start_file(entry, options).unwrap();
        let zeros = vec![0u8; 1024 * 1024];
        for _ in 0..megabytes {
            writer.write_all(&zeros).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    #[test]
    fn reads_entries_and_counts_budget() {
        let bytes = zip_of(&[("a.txt", b"hello"), ("b.txt", b"world!")]);
        let limits = ParseLimits {
            max_unpacked_bytes: 8,
            ..ParseLimits::default()
        };
        // The declared total (11) is over 8: refused up front.
        assert!(matches!(
            Container::open(&bytes, &limits, "docx"),
            Err(ParseError::Limit(_))
        ));
        let mut c = Container::open(&bytes, &ParseLimits::default(), "docx").unwrap();
        assert_eq!(c.read("a.txt").unwrap().as_deref(), Some("hello"));
        assert_eq!(c.read("missing").unwrap(), None);
        c.budget = 3;
        assert!(matches!(c.read("b.txt"), Err(ParseError::Limit(_))));
    }

    #[test]
    fn too_many_entries_is_a_limit() {
        let names: Vec<String> = (0..12).map(|i| format!("f{i}")).collect();
        let entries: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
        let bytes = zip_of(&entries);
        let limits = ParseLimits {
            max_zip_entries: 10,
            ..ParseLimits::default()
        };
        let err = Container::open(&bytes, &limits, "xlsx").err().unwrap();
        assert!(err.to_string().contains("12 zip entries"), "{err}");
    }

    #[test]
    fn a_zip_bomb_is_refused_quickly() {
        let bytes = zeros_bomb("word/document.xml", 40, &[]);
        assert!(bytes.len() < 2 * 1024 * 1024, "{}", bytes.len());
        // Refused from the zip directory alone, before anything is inflated.
        let err =
            super::super::parse(SourceKind::Docx, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
        assert!(err.to_string().contains("unpacks"), "{err}");
        let err =
            super::super::parse(SourceKind::Xlsx, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
    }

    #[test]
    fn the_docx_zip_bomb_is_refused_from_its_directory() {
        let bytes = crate::fixtures::docx_zip_bomb();
        assert!(bytes.len() < 2 * 1024 * 1024, "{}", bytes.len());
        // The directory tells the truth, and the data inflates to what it says.
        let mut archive = ZipArchive::new(Cursor::new(bytes.as_slice())).unwrap();
        let entry = archive.by_name("word/document.xml").unwrap();
        assert_eq!(entry.size(), 1 << 30);
        let inflated = std::io::copy(&mut entry.take(3 << 20), &mut std::io::sink()).unwrap();
        assert_eq!(inflated, 3 << 20);
        let err =
            super::super::parse(SourceKind::Docx, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
        assert!(err.to_string().contains("the limit is 200x"), "{err}");
    }

    #[test]
    fn an_entry_larger_than_its_header_says_is_refused() {
        // Holds 4096 bytes; forge the directory and local header to say 100. The zip reader
        // stops at the declared size, so the entry reads as damaged, not as 4096 bytes.
        let mut bytes = zip_of(&[("word/document.xml", &[b'a'; 4096][..])]);
        let forged = 100u32.to_le_bytes();
        let declared = 4096u32.to_le_bytes();
        let mut at = 0;
        while let Some(i) = bytes[at..].windows(4).position(|w| w == declared) {
            bytes[at + i..at + i + 4].copy_from_slice(&forged);
            at += i + 4;
        }
        let err =
            super::super::parse(SourceKind::Docx, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Corrupt { .. }), "{err}");
        let err =
            super::super::parse(SourceKind::Xlsx, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(
            matches!(err, ParseError::Corrupt { .. } | ParseError::Limit(_)),
            "{err}"
        );
    }

    #[test]
    fn a_lying_header_is_stopped_by_the_budget() {
        // Small ratio, so the up-front check passes; the read itself must stop at the budget.
        let bytes = zip_of(&[("big", &[7u8; 4096][..])]);
        let mut c = Container::open(&bytes, &ParseLimits::default(), "docx").unwrap();
        c.budget = 100;
        assert!(matches!(c.read("big"), Err(ParseError::Limit(_))));
    }

    #[test]
    fn sniffs_containers() {
        let docx = zip_of(&[("word/document.xml", b"<w:document/>")]);
        let xlsx = zip_of(&[("xl/workbook.xml", b"<workbook/>")]);
        let ods = zip_of(&[(
            "mimetype",
            b"application/vnd.oasis.opendocument.spreadsheet",
        )]);
        let odt = zip_of(&[("mimetype", b"application/vnd.oasis.opendocument.text")]);
        assert_eq!(super::super::sniff(&docx), Some(SourceKind::Docx));
        assert_eq!(super::super::sniff(&xlsx), Some(SourceKind::Xlsx));
        assert_eq!(super::super::sniff(&ods), Some(SourceKind::Ods));
        assert_eq!(super::super::sniff(&odt), None);
    }

    #[test]
    fn encrypted_ooxml_is_spotted() {
        let mut ole = OLE_MAGIC.to_vec();
        ole.extend_from_slice(&[0u8; 64]);
        assert!(!is_encrypted_ooxml(&ole));
        ole.extend_from_slice(b"E\0n\0c\0r\0y\0p\0t\0e\0d\0P\0a\0c\0k\0a\0g\0e\0");
        assert!(is_encrypted_ooxml(&ole));
        let err = super::super::parse(SourceKind::Docx, &ole, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Encrypted), "{err}");
        let err = super::super::parse(SourceKind::Xlsx, &ole, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Encrypted), "{err}");
    }
}
