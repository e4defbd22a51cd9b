//! Plain text: UTF-8 (invalid bytes replaced), or UTF-16 LE/BE when a byte-order mark says so.
//! Line endings are normalised to `\n`. The whole file is one section with an empty path; text
//! files are not searched for Markdown headings (upload them as Markdown for that).

use super::sink::Sections;
use super::{ParseError, ParseLimits};
use crate::model::Parsed;

pub(crate) fn parse(bytes: &[u8], limits: &ParseLimits) -> Result<Parsed, ParseError> {
    let text = decode(bytes);
    let mut out = Sections::new(limits.max_text_bytes);
    out.push(String::new(), text)?;
    Ok(Parsed {
        sections: out.into_vec(),
        images: Vec::new(),
        pages: 1,
    })
}

/// Decodes text bytes: a UTF-8 BOM is dropped, UTF-16 with a BOM is decoded, anything else is
/// read as UTF-8 with invalid sequences replaced. CRLF and lone CR become LF.
pub(crate) fn decode(bytes: &[u8]) -> String {
    let text = if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        String::from_utf8_lossy(rest).into_owned()
    } else if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        decode_utf16(rest, u16::from_le_bytes)
    } else if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        decode_utf16(rest, u16::from_be_bytes)
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    };
    normalize_newlines(&text)
}

fn decode_utf16(bytes: &[u8], unit: fn([u8; 2]) -> u16) -> String {
    let units = bytes.chunks_exact(2).map(|pair| unit([pair[0], pair[1]]));
    char::decode_utf16(units)
        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

fn normalize_newlines(text: &str) -> String {
    if !text.contains('\r') {
        return text.to_string();
    }
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// Whether the bytes look like text: UTF-16 with a BOM, or valid UTF-8 without NULs or many
/// control characters.
pub(crate) fn is_text(bytes: &[u8]) -> bool {
    if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return bytes.len().is_multiple_of(2);
    }
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let Ok(text) = std::str::from_utf8(body) else {
        return false;
    };
    let controls = text
        .chars()
        .filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\x0C'))
        .count();
    !text.contains('\0') && controls * 100 <= text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_with_crlf_is_one_section() {
        let parsed = parse(
            b"\xEF\xBB\xBFline one\r\nline two\rthree\n",
            &ParseLimits::default(),
        )
        .unwrap();
        assert_eq!(parsed.sections.len(), 1);
        assert_eq!(parsed.sections[0].path, "");
        assert_eq!(parsed.sections[0].text, "line one\nline two\nthree");
        assert_eq!(parsed.pages, 1);
    }

    #[test]
    fn utf16_with_bom() {
        let mut le = vec![0xFF, 0xFE];
        let mut be = vec![0xFE, 0xFF];
        for unit in "héllo €".encode_utf16() {
            le.extend_from_slice(&unit.to_le_bytes());
            be.extend_from_slice(&unit.to_be_bytes());
        }
        assert_eq!(decode(&le), "héllo €");
        assert_eq!(decode(&be), "héllo €");
    }

    #[test]
    fn invalid_utf8_is_lossy() {
        assert_eq!(decode(b"caf\xE9 ok"), "caf\u{FFFD} ok");
    }

    #[test]
    fn text_cap() {
        let limits = ParseLimits {
            max_text_bytes: 4,
            ..ParseLimits::default()
        };
        assert!(matches!(
            parse(b"longer than four", &limits),
            Err(ParseError::Limit(_))
        ));
    }

    #[test]
    fn one_long_line_reads_within_the_text_limit() {
        let bytes = crate::fixtures::one_line_text(25_000_000);
        assert_eq!(bytes.len(), 25_000_000);
        assert!(!bytes.contains(&b'\n'));
        let parsed = parse(&bytes, &ParseLimits::default()).unwrap();
        assert_eq!(parsed.sections.len(), 1);
        assert_eq!(parsed.sections[0].text.len(), 25_000_000);
        let limits = ParseLimits {
            max_text_bytes: 10 * 1024 * 1024,
            ..ParseLimits::default()
        };
        let err = parse(&bytes, &limits).unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
        assert_eq!(
            err.to_string(),
            "the document's text is longer than the limit of 10485760 bytes"
        );
    }

    #[test]
    fn text_detection() {
        assert!(is_text(b"hello\tworld\n"));
        assert!(!is_text(b"hel\0lo"));
        assert!(!is_text(b"\xC3\x28"));
    }
}
