//! DOCX: the body of `word/document.xml`.
//!
//! - Paragraphs (`w:p`) take their text from `w:t`; `w:tab` is a space, `w:br`/`w:cr` a
//!   newline. Deleted text, field instructions and the `mc:Fallback` copy of drawings are
//!   skipped.
//! - Headings: paragraph style `Title` (outermost) or `Heading1`..`Heading9`, or any style that
//!   `word/styles.xml` names `heading N`/`Title` or gives an outline level. The heading path
//!   names the sections; a new section starts each time it changes.
//! - List paragraphs (`w:numPr`) are lines of one block; tables are one line per row, cells
//!   joined by ` | ` (nested tables flatten into their cell).
//!
//! Headers, footers, footnotes and comments are not read. Legacy `.doc` files are refused as
//! unsupported; password-protected files as encrypted.

use std::collections::HashMap;

use quick_xml::events::{BytesRef, BytesStart, Event};
use quick_xml::Reader;

use super::sink::Outline;
use super::zip_guard::{self, Container};
use super::{ParseError, ParseLimits};
use crate::model::Parsed;

const KIND: &str = "docx";

pub(crate) fn parse(bytes: &[u8], limits: &ParseLimits) -> Result<Parsed, ParseError> {
    if zip_guard::is_encrypted_ooxml(bytes) {
        return Err(ParseError::Encrypted);
    }
    if zip_guard::is_ole(bytes) {
        return Err(ParseError::Unsupported(
            "this is a legacy word .doc file; save it as .docx and upload it again".into(),
        ));
    }
    let mut container = Container::open(bytes, limits, KIND)?;
    let styles = match container.read("word/styles.xml")? {
        Some(xml) => heading_styles(&xml),
        None => HashMap::new(),
    };
    let document = container
        .read("word/document.xml")?
        .ok_or_else(|| ParseError::corrupt(KIND, "word/document.xml is missing"))?;
    let sections = walk_document(&document, &styles, limits)?;
    Ok(Parsed {
        sections,
        images: Vec::new(),
        pages: 1,
    })
}

/// The heading level of a paragraph style id: 0 for `Title`, N for `HeadingN`.
fn builtin_level(style_id: &str) -> Option<u8> {
    if style_id.eq_ignore_ascii_case("title") {
        return Some(0);
    }
    let rest = style_id
        .strip_prefix("Heading")
        .or_else(|| style_id.strip_prefix("heading"))?;
    let level: u8 = rest.trim().parse().ok()?;
    (1..=9).contains(&level).then_some(level)
}

/// Style id -> heading level, from `word/styles.xml` (names like `heading 1`, `Title`, or an
/// outline level). Unparseable styles are ignored: the built-in ids still work.
fn heading_styles(xml: &str) -> HashMap<String, u8> {
    let mut levels = HashMap::new();
    let mut reader = Reader::from_str(xml);
    let mut current: Option<String> = None;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => match e.local_name().as_ref() {
                "style" => current = attr(&e, "styleId"),
                "name" => {
                    if let (Some(id), Some(name)) = (&current, attr(&e, "val")) {
                        let compact: String = name.split_whitespace().collect();
                        if let Some(level) = builtin_level(&compact) {
                            levels.insert(id.clone(), level);
                        }
                    }
                }
                "outlineLvl" => {
                    let level = attr(&e, "val").and_then(|v| v.parse::<u8>().ok());
                    if let (Some(id), Some(level)) = (&current, level) {
                        if level < 9 {
                            levels.entry(id.clone()).or_insert(level + 1);
                        }
                    }
                }
                _ => {}
            },
            Ok(Event::End(e)) if e.local_name().as_ref() == "style" => current = None,
            Ok(Event::Eof) | Err(_) => break,
            _ => {}
        }
    }
    levels
}

/// The value of the attribute whose local name is `key`.
fn attr(e: &BytesStart, key: &str) -> Option<String> {
    e.attributes().flatten().find_map(|a| {
        let name = a.key.as_ref();
        let local = name.rsplit(':').next().unwrap_or(name);
        (local == key).then(|| {
            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .map(|v| v.into_owned())
                .unwrap_or_else(|_| a.value.into_owned())
        })
    })
}

/// The text of an entity or character reference (`&amp;`, `&#233;`).
pub(crate) fn resolve_ref(r: &BytesRef) -> Option<char> {
    if let Ok(Some(c)) = r.resolve_char_ref() {
        return Some(c);
    }
    match r.as_ref() {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => None,
    }
}

#[derive(Default)]
struct Paragraph {
    text: String,
    style: Option<String>,
    outline_level: Option<u8>,
    list: bool,
}

#[derive(Default)]
struct Table {
    row: Vec<String>,
    cell: String,
}

struct Walker<'s> {
    styles: &'s HashMap<String, u8>,
    out: Outline,
    paragraphs: Vec<Paragraph>,
    tables: Vec<Table>,
    in_run: usize,
    in_text: bool,
    skip_depth: usize,
}

fn walk_document(
    xml: &str,
    styles: &HashMap<String, u8>,
    limits: &ParseLimits,
) -> Result<Vec<crate::model::Section>, ParseError> {
    let mut w = Walker {
        styles,
        out: Outline::new(limits.max_text_bytes),
        paragraphs: Vec::new(),
        tables: Vec::new(),
        in_run: 0,
        in_text: false,
        skip_depth: 0,
    };
    let mut reader = Reader::from_str(xml);
    loop {
        let event = reader.read_event().map_err(|e| {
            tracing::debug!(error = %e, "docx xml error");
            ParseError::corrupt(KIND, "word/document.xml is not well-formed xml")
        })?;
        match event {
            Event::Eof => break,
            Event::Start(e) => w.start(&e, false)?,
            Event::Empty(e) => w.start(&e, true)?,
            Event::End(e) => w.end(e.local_name().as_ref())?,
            Event::Text(t) if w.in_text && w.skip_depth == 0 => w.push_text(&t.xml10_content()),
            Event::CData(t) if w.in_text && w.skip_depth == 0 => w.push_text(&t.xml10_content()),
            Event::GeneralRef(r) if w.in_text && w.skip_depth == 0 => {
                if let Some(c) = resolve_ref(&r) {
                    w.push_text(c.encode_utf8(&mut [0; 4]));
                }
            }
            _ => {}
        }
    }
    w.out.finish()
}

impl Walker<'_> {
    fn push_text(&mut self, text: &str) {
        if let Some(p) = self.paragraphs.last_mut() {
            p.text.push_str(text);
        }
    }

    fn start(&mut self, e: &BytesStart, empty: bool) -> Result<(), ParseError> {
        let name = e.local_name();
        let name = name.as_ref();
        if self.skip_depth > 0 {
            if !empty {
                self.skip_depth += 1;
            }
            return Ok(());
        }
        match name {
            "Fallback" | "delText" | "instrText" if !empty => self.skip_depth = 1,
            "p" if !empty => self.paragraphs.push(Paragraph::default()),
            "pStyle" => {
                if let Some(p) = self.paragraphs.last_mut() {
                    p.style = attr(e, "val");
                }
            }
            "outlineLvl" => {
                if let Some(p) = self.paragraphs.last_mut() {
                    p.outline_level = attr(e, "val")
                        .and_then(|v| v.parse::<u8>().ok())
                        .filter(|l| *l < 9)
                        .map(|l| l + 1);
                }
            }
            "numPr" => {
                if let Some(p) = self.paragraphs.last_mut() {
                    p.list = true;
                }
            }
            "r" if !empty => self.in_run += 1,
            "t" if !empty => self.in_text = true,
            "tab" if self.in_run > 0 => self.push_text(" "),
            "br" | "cr" if self.in_run > 0 => self.push_text("\n"),
            "tbl" if !empty => {
                self.out.end_block();
                self.tables.push(Table::default());
            }
            "tr" if !empty => {
                if let Some(t) = self.tables.last_mut() {
                    t.row.clear();
                }
            }
            "tc" if !empty => {
                if let Some(t) = self.tables.last_mut() {
                    t.cell.clear();
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, name: &str) -> Result<(), ParseError> {
        if self.skip_depth > 0 {
            self.skip_depth -= 1;
            return Ok(());
        }
        match name {
            "t" => self.in_text = false,
            "r" => self.in_run = self.in_run.saturating_sub(1),
            "p" => {
                if let Some(p) = self.paragraphs.pop() {
                    self.finish_paragraph(p)?;
                }
            }
            "tc" => {
                if let Some(t) = self.tables.last_mut() {
                    let cell = super::sink::collapse_whitespace(&t.cell);
                    t.row.push(cell);
                }
            }
            "tr" => {
                if let Some(t) = self.tables.last_mut() {
                    let cells: Vec<&str> = t
                        .row
                        .iter()
                        .map(String::as_str)
                        .filter(|c| !c.is_empty())
                        .collect();
                    let line = cells.join(" | ");
                    if self.tables.len() == 1 {
                        self.out.line(&line)?;
                    } else {
                        self.add_to_outer_cell(&line);
                    }
                }
            }
            "tbl" => {
                self.tables.pop();
                if self.tables.is_empty() {
                    self.out.end_block();
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A finished row of a nested table becomes text of the enclosing table's cell.
    fn add_to_outer_cell(&mut self, line: &str) {
        let depth = self.tables.len();
        if depth >= 2 {
            let outer = &mut self.tables[depth - 2];
            if !outer.cell.is_empty() {
                outer.cell.push(' ');
            }
            outer.cell.push_str(line);
        }
    }

    fn finish_paragraph(&mut self, p: Paragraph) -> Result<(), ParseError> {
        let text = p.text.trim();
        if let Some(table) = self.tables.last_mut() {
            if !text.is_empty() {
                if !table.cell.is_empty() {
                    table.cell.push(' ');
                }
                table.cell.push_str(text);
            }
            return Ok(());
        }
        let level = p
            .style
            .as_deref()
            .and_then(|s| self.styles.get(s).copied().or_else(|| builtin_level(s)))
            .or(p.outline_level);
        match level {
            Some(level) => self.out.heading(level, text),
            None if p.list => self.out.line(text),
            None => self.out.paragraph(text),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::SourceKind;
    use crate::parse::zip_guard::tests::zip_of;

    fn para(style: Option<&str>, text: &str) -> String {
        let ppr = style
            .map(|s| format!("<w:pPr><w:pStyle w:val=\"{s}\"/></w:pPr>"))
            .unwrap_or_default();
        format!("<w:p>{ppr}<w:r><w:t xml:space=\"preserve\">{text}</w:t></w:r></w:p>")
    }

    pub(crate) fn docx_of(body: &str, styles: Option<&str>) -> Vec<u8> {
        let document = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\
             <w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\">\
             <w:body>{body}<w:sectPr/></w:body></w:document>"
        );
        let mut entries: Vec<(&str, &[u8])> = vec![
            ("[Content_Types].xml", b"<Types/>"),
            ("word/document.xml", document.as_bytes()),
        ];
        if let Some(styles) = styles {
            entries.push(("word/styles.xml", styles.as_bytes()));
        }
        zip_of(&entries)
    }

    fn parse_docx(bytes: &[u8]) -> Vec<(String, String)> {
        crate::parse::parse(SourceKind::Docx, bytes, &ParseLimits::default())
            .unwrap()
            .sections
            .into_iter()
            .map(|s| (s.path, s.text))
            .collect()
    }

    #[test]
    fn paragraphs_headings_and_tables() {
        let body = [
            para(Some("Title"), "Handbook"),
            para(None, "Intro &amp; welcome."),
            para(Some("Heading1"), "Setup"),
            "<w:p><w:r><w:t>Tab</w:t><w:tab/><w:t>here</w:t><w:br/><w:t>next line</w:t></w:r></w:p>"
                .to_string(),
            "<w:tbl><w:tr><w:tc>".to_string()
                + &para(None, "Name")
                + "</w:tc><w:tc>"
                + &para(None, "Age")
                + "</w:tc></w:tr><w:tr><w:tc>"
                + &para(None, "Ada")
                + "</w:tc><w:tc>"
                + &para(None, "36")
                + "</w:tc></w:tr></w:tbl>",
            para(Some("Heading2"), "Linux"),
            para(None, "Use apt."),
            para(Some("Heading1"), "Usage"),
            para(None, "Run it."),
        ]
        .concat();
        let got = parse_docx(&docx_of(&body, None));
        assert_eq!(
            got,
            vec![
                ("Handbook".into(), "Intro & welcome.".into()),
                (
                    "Handbook > Setup".into(),
                    "Tab here\nnext line\n\nName | Age\nAda | 36".into()
                ),
                ("Handbook > Setup > Linux".into(), "Use apt.".into()),
                ("Handbook > Usage".into(), "Run it.".into()),
            ]
        );
    }

    #[test]
    fn custom_heading_style_ids_via_styles_xml() {
        let styles = "<w:styles xmlns:w=\"x\">\
            <w:style w:type=\"paragraph\" w:styleId=\"berschrift1\"><w:name w:val=\"heading 1\"/></w:style>\
            <w:style w:type=\"paragraph\" w:styleId=\"Custom\"><w:name w:val=\"Chapter\"/>\
            <w:pPr><w:outlineLvl w:val=\"1\"/></w:pPr></w:style></w:styles>";
        let body = [
            para(Some("berschrift1"), "Kapitel"),
            para(None, "Text eins."),
            para(Some("Custom"), "Sub"),
            para(None, "Text zwei."),
        ]
        .concat();
        let got = parse_docx(&docx_of(&body, Some(styles)));
        assert_eq!(
            got,
            vec![
                ("Kapitel".into(), "Text eins.".into()),
                ("Kapitel > Sub".into(), "Text zwei.".into()),
            ]
        );
    }

    #[test]
    fn missing_document_is_corrupt() {
        let bytes = zip_of(&[("word/other.xml", b"<x/>")]);
        let err =
            crate::parse::parse(SourceKind::Docx, &bytes, &ParseLimits::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "corrupt docx file: word/document.xml is missing"
        );
    }

    #[test]
    fn broken_xml_is_corrupt() {
        let bytes = zip_of(&[("word/document.xml", b"<w:document><w:body><w:p></w:q>")]);
        let err =
            crate::parse::parse(SourceKind::Docx, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(
            matches!(err, ParseError::Corrupt { kind: "docx", .. }),
            "{err}"
        );
    }

    #[test]
    fn legacy_doc_is_unsupported() {
        let mut ole = vec![0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
        ole.extend_from_slice(&[0; 100]);
        let err = crate::parse::parse(SourceKind::Docx, &ole, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Unsupported(_)), "{err}");
    }
}
