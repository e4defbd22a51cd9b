//! Spreadsheets (XLSX, XLS, ODS) through calamine, and the row formatting that CSV shares.
//!
//! For each sheet, when the first non-empty row looks like a header (every cell a non-empty,
//! non-numeric string) each later row becomes `Header1: value1; Header2: value2` (empty cells
//! skipped); otherwise a row is its cells joined by ` | `. Rows are grouped 50 to a section,
//! `SheetName > Rows A-B` with 1-based spreadsheet row numbers. Dates print as ISO dates.
//!
//! Limits: zip containers pass [`super::zip_guard`] first and every entry is test-inflated
//! against its declared size (calamine reads entries itself, so a lying header must be caught
//! before). calamine allocates from what a workbook declares before it reads a cell, so each
//! format is checked before calamine sees it:
//!
//! - XLS: [`super::xls_guard`] reads the workbook stream out of the compound file, charges
//!   every DIMENSIONS record and every sheet's cell grid against [`ParseLimits::max_cells`],
//!   and hands calamine a clean compound file holding only the checked stream.
//! - ODS: [`super::ods_guard`] streams `content.xml` and charges repeated rows and columns
//!   the way calamine expands them.
//! - XLSX: calamine reserves the shared string table from its declared `uniqueCount`, which
//!   is charged against [`ParseLimits::max_cells`]; worksheet `<dimension>` only sizes a
//!   reservation capped by calamine at 100,000 cells (and we stream cells, which reserves
//!   nothing), so it is not checked.
//!
//! Then XLSX cells are streamed and counted against [`ParseLimits::max_cells`] as they come;
//! XLS and ODS ranges are counted once loaded; the text held for every format is counted
//! against [`ParseLimits::max_text_bytes`] as it is read. `pages` is the number of sheets.

use std::collections::BTreeMap;
use std::io::Cursor;

use calamine::{Data, DataType, Ods, OdsError, Reader, Xls, XlsError, Xlsx, XlsxError};

use super::sink::{text_limit, Sections};
use super::zip_guard::{self, Container};
use super::{kind_name, ods_guard, xls_guard, ParseError, ParseLimits};
use crate::model::{Parsed, SourceKind};

/// Rows per section.
pub(crate) const ROWS_PER_SECTION: usize = 50;

/// One cell's text, and whether it is text (a header candidate) rather than a number or date.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cell {
    pub(crate) text: String,
    pub(crate) textual: bool,
}

pub(crate) fn parse(
    kind: SourceKind,
    bytes: &[u8],
    limits: &ParseLimits,
) -> Result<Parsed, ParseError> {
    // Trust the bytes over the declared kind: a `.xls` that is really XLSX still reads.
    let format = if zip_guard::is_encrypted_ooxml(bytes) {
        return Err(ParseError::Encrypted);
    } else if zip_guard::is_ole(bytes) {
        SourceKind::Xls
    } else if bytes.starts_with(b"PK\x03\x04") {
        let probe = Container::open(bytes, limits, kind_name(kind))?;
        if probe.has("xl/workbook.xml") {
            SourceKind::Xlsx
        } else if probe.has("content.xml") {
            SourceKind::Ods
        } else {
            return Err(ParseError::corrupt(
                kind_name(kind),
                "the archive holds no workbook",
            ));
        }
    } else {
        return Err(ParseError::corrupt(
            kind_name(kind),
            "not a spreadsheet file",
        ));
    };
    let name = kind_name(format);
    if format != SourceKind::Xls {
        zip_guard::verify_sizes(bytes, limits, name)?;
    }
    let mut budget = Budget {
        cells: limits.max_cells,
        text: limits.max_text_bytes,
        limits,
    };
    let mut out = Sections::new(limits.max_text_bytes);
    let sheets = match format {
        SourceKind::Xlsx => {
            check_shared_strings(bytes, limits)?;
            let mut book = Xlsx::new(Cursor::new(bytes)).map_err(xlsx_error)?;
            let names = book.sheet_names();
            for sheet in &names {
                let rows = xlsx_rows(&mut book, sheet, &mut budget)?;
                rows_to_sections(rows, Some(sheet), &mut out)?;
            }
            names.len()
        }
        SourceKind::Xls => {
            let clean = xls_guard::prepare(bytes, limits)?;
            let mut book = Xls::new(Cursor::new(clean.as_slice())).map_err(xls_error)?;
            let names = book.sheet_names();
            for sheet in &names {
                let range = book.worksheet_range(sheet).map_err(xls_error)?;
                let rows = range_rows(&range, &mut budget)?;
                rows_to_sections(rows, Some(sheet), &mut out)?;
            }
            names.len()
        }
        _ => {
            ods_guard::check(bytes, limits)?;
            let mut book = Ods::new(Cursor::new(bytes)).map_err(ods_error)?;
            let names = book.sheet_names();
            for sheet in &names {
                let range = book.worksheet_range(sheet).map_err(ods_error)?;
                let rows = range_rows(&range, &mut budget)?;
                rows_to_sections(rows, Some(sheet), &mut out)?;
            }
            names.len()
        }
    };
    Ok(Parsed {
        sections: out.into_vec(),
        images: Vec::new(),
        pages: u32::try_from(sheets).unwrap_or(u32::MAX),
    })
}

fn xlsx_error(err: XlsxError) -> ParseError {
    match err {
        XlsxError::Password => ParseError::Encrypted,
        other => {
            tracing::debug!(error = %other, "xlsx read error");
            ParseError::corrupt("xlsx", format!("the workbook could not be read {other}"))
        }
    }
}

fn xls_error(err: XlsError) -> ParseError {
    match err {
        XlsError::Password => ParseError::Encrypted,
        other => {
            tracing::debug!(error = %other, "xls read error");
            ParseError::corrupt("xls", "the workbook could not be read")
        }
    }
}

fn ods_error(err: OdsError) -> ParseError {
    match err {
        OdsError::Password => ParseError::Encrypted,
        other => {
            tracing::debug!(error = %other, "ods read error");
            ParseError::corrupt("ods", "the workbook could not be read")
        }
    }
}

/// What is left of the cell and text limits while a workbook is read.
struct Budget<'a> {
    cells: u64,
    text: usize,
    limits: &'a ParseLimits,
}

impl Budget<'_> {
    /// Charges one non-empty cell holding `text`.
    fn charge(&mut self, text: &str) -> Result<(), ParseError> {
        let max = self.limits.max_cells;
        self.cells = self.cells.checked_sub(1).ok_or_else(|| {
            ParseError::Limit(format!(
                "the spreadsheet has more than {max} cells; the limit is {max} cells"
            ))
        })?;
        self.text = self
            .text
            .checked_sub(text.len())
            .ok_or_else(|| text_limit(self.limits.max_text_bytes))?;
        Ok(())
    }
}

/// calamine reserves room for the shared strings an XLSX declares (`<sst uniqueCount>`) before
/// it reads one. A workbook cannot use more distinct strings than it has cells, so a count over
/// [`ParseLimits::max_cells`] is refused. Every entry named like the shared strings part is
/// checked, wherever the package's relationships put it.
fn check_shared_strings(bytes: &[u8], limits: &ParseLimits) -> Result<(), ParseError> {
    use quick_xml::events::Event;
    let Ok(mut zip) = zip::ZipArchive::new(Cursor::new(bytes)) else {
        return Ok(());
    };
    for index in 0..zip.len() {
        let Ok(entry) = zip.by_index(index) else {
            continue;
        };
        let Ok(name) = entry.name() else {
            continue;
        };
        let name = name.replace('\\', "/").to_ascii_lowercase();
        if !name.ends_with("sharedstrings.xml") {
            continue;
        }
        let mut reader = quick_xml::Reader::from_reader(std::io::BufReader::new(entry));
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_event_into(&mut buf) {
                Ok(Event::Start(e)) | Ok(Event::Empty(e)) if e.local_name().as_ref() == "sst" => {
                    let count = ods_guard::raw_attrs(e.attributes_raw())
                        .map_while(Result::ok)
                        .find(|(key, _)| *key == "uniqueCount")
                        .map(|(_, value)| value.to_string());
                    if let Some(count) = count {
                        let digits = count.trim_start_matches('0');
                        let declared: u128 = if digits.len() > 30 {
                            u128::MAX
                        } else {
                            digits
                                .bytes()
                                .take_while(u8::is_ascii_digit)
                                .fold(0u128, |n, d| n * 10 + u128::from(d - b'0'))
                        };
                        if declared > u128::from(limits.max_cells) {
                            return Err(ParseError::Limit(format!(
                                "the spreadsheet declares {count} shared strings, more than \
                                 the limit of {} cells",
                                limits.max_cells
                            )));
                        }
                    }
                    break;
                }
                Ok(Event::Eof) | Err(_) => break,
                _ => {}
            }
        }
    }
    Ok(())
}

/// Sparse rows: 1-based row number -> cells by 0-based column.
type Rows = BTreeMap<u32, Vec<(u32, Cell)>>;

fn xlsx_rows(
    book: &mut Xlsx<Cursor<&[u8]>>,
    sheet: &str,
    budget: &mut Budget<'_>,
) -> Result<Rows, ParseError> {
    let mut rows = Rows::new();
    let mut reader = book.worksheet_cells_reader(sheet).map_err(xlsx_error)?;
    while let Some(cell) = reader.next_cell().map_err(xlsx_error)? {
        if cell.get_value().is_empty() {
            continue;
        }
        let (row, col) = cell.get_position();
        let data: Data = cell.get_value().clone().into();
        let cell = to_cell(&data);
        budget.charge(&cell.text)?;
        if !cell.text.is_empty() {
            rows.entry(row.saturating_add(1))
                .or_default()
                .push((col, cell));
        }
    }
    Ok(rows)
}

fn range_rows(range: &calamine::Range<Data>, budget: &mut Budget<'_>) -> Result<Rows, ParseError> {
    let (row0, col0) = range.start().unwrap_or((0, 0));
    let mut rows = Rows::new();
    for (row, col, data) in range.used_cells() {
        let cell = to_cell(data);
        budget.charge(&cell.text)?;
        if cell.text.is_empty() {
            continue;
        }
        let row = row0.saturating_add(row as u32).saturating_add(1);
        let col = col0.saturating_add(col as u32);
        rows.entry(row).or_default().push((col, cell));
    }
    Ok(rows)
}

fn to_cell(data: &Data) -> Cell {
    match data {
        Data::String(s) => Cell {
            text: super::sink::collapse_whitespace(s),
            textual: true,
        },
        Data::DateTime(dt) if dt.is_datetime() => {
            let (y, mo, d, h, mi, s, _) = dt.to_ymd_hms_milli();
            let text = if (h, mi, s) == (0, 0, 0) {
                format!("{y:04}-{mo:02}-{d:02}")
            } else {
                format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
            };
            Cell {
                text,
                textual: false,
            }
        }
        Data::Empty => Cell::default(),
        other => Cell {
            text: other.to_string(),
            textual: false,
        },
    }
}

/// Turns sparse rows into dense ones (trailing empties dropped) and formats them.
fn rows_to_sections(rows: Rows, sheet: Option<&str>, out: &mut Sections) -> Result<(), ParseError> {
    let dense = rows.into_iter().map(|(number, cells)| {
        let width = cells
            .iter()
            .map(|(c, _)| *c as usize + 1)
            .max()
            .unwrap_or(0);
        // A row's width is bounded by the cells it holds; columns past the last cell are cut
        // so that one cell at column XFD does not allocate 16k empty strings per row.
        let width = width.min(cells.len().saturating_mul(4).max(64));
        let mut dense = vec![Cell::default(); width];
        for (col, cell) in cells {
            if let Some(slot) = dense.get_mut(col as usize) {
                *slot = cell;
            }
        }
        (number, dense)
    });
    format_rows(dense, sheet, out)
}

/// Formats rows (1-based row number, cells) as lines, 50 to a section. Shared with CSV.
pub(crate) fn format_rows(
    rows: impl IntoIterator<Item = (u32, Vec<Cell>)>,
    prefix: Option<&str>,
    out: &mut Sections,
) -> Result<(), ParseError> {
    let mut header: Option<(u32, Vec<String>)> = None;
    let mut seen_first = false;
    let mut group: Vec<String> = Vec::new();
    let mut first_row = 0u32;
    let mut last_row = 0u32;
    for (number, mut cells) in rows {
        while cells.last().is_some_and(|c| c.text.is_empty()) {
            cells.pop();
        }
        if cells.is_empty() {
            continue;
        }
        if !seen_first {
            seen_first = true;
            if cells.iter().all(|c| c.textual && !c.text.is_empty()) {
                header = Some((number, cells.into_iter().map(|c| c.text).collect()));
                continue;
            }
        }
        let line = match &header {
            Some((_, names)) => cells
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.text.is_empty())
                .map(|(i, c)| match names.get(i) {
                    Some(name) => format!("{name}: {}", c.text),
                    None => format!("Column {}: {}", i + 1, c.text),
                })
                .collect::<Vec<_>>()
                .join("; "),
            None => cells
                .iter()
                .filter(|c| !c.text.is_empty())
                .map(|c| c.text.as_str())
                .collect::<Vec<_>>()
                .join(" | "),
        };
        if group.is_empty() {
            first_row = number;
        }
        last_row = number;
        group.push(line);
        if group.len() == ROWS_PER_SECTION {
            flush(&mut group, prefix, first_row, last_row, out)?;
        }
    }
    if !group.is_empty() {
        flush(&mut group, prefix, first_row, last_row, out)?;
    } else if let Some((number, names)) = header {
        // A header with no rows under it is still the sheet's text.
        let mut line = vec![names.join(" | ")];
        flush(&mut line, prefix, number, number, out)?;
    }
    Ok(())
}

fn flush(
    group: &mut Vec<String>,
    prefix: Option<&str>,
    first: u32,
    last: u32,
    out: &mut Sections,
) -> Result<(), ParseError> {
    let rows = format!("Rows {first}-{last}");
    let path = match prefix {
        Some(sheet) => format!("{sheet} > {rows}"),
        None => rows,
    };
    out.push(path, std::mem::take(group).join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::zip_guard::tests::{zeros_bomb, zip_of};

    fn xlsx_of(sheets: &[(&str, &str)], shared: &[&str]) -> Vec<u8> {
        let mut workbook = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
             <workbook xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\" \
             xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\"><sheets>",
        );
        let mut rels = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
             <Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">",
        );
        let mut files: Vec<(String, String)> = Vec::new();
        for (i, (name, rows)) in sheets.iter().enumerate() {
            let n = i + 1;
            workbook.push_str(&format!(
                "<sheet name=\"{name}\" sheetId=\"{n}\" r:id=\"rId{n}\"/>"
            ));
            rels.push_str(&format!(
                "<Relationship Id=\"rId{n}\" \
                 Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet\" \
                 Target=\"worksheets/sheet{n}.xml\"/>"
            ));
            files.push((
                format!("xl/worksheets/sheet{n}.xml"),
                format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
                     <worksheet xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\">\
                     <sheetData>{rows}</sheetData></worksheet>"
                ),
            ));
        }
        workbook.push_str("</sheets></workbook>");
        let strings: String = shared
            .iter()
            .map(|s| format!("<si><t>{s}</t></si>"))
            .collect();
        rels.push_str(
            "<Relationship Id=\"rIdS\" \
             Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings\" \
             Target=\"sharedStrings.xml\"/></Relationships>",
        );
        files.push(("xl/workbook.xml".into(), workbook));
        files.push((
            "_rels/.rels".into(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
             <Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">\
             <Relationship Id=\"rId1\" \
             Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" \
             Target=\"xl/workbook.xml\"/></Relationships>"
                .into(),
        ));
        files.push(("xl/_rels/workbook.xml.rels".into(), rels));
        files.push((
            "xl/sharedStrings.xml".into(),
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
                 <sst xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\">{strings}</sst>"
            ),
        ));
        files.push((
            "[Content_Types].xml".into(),
            "<?xml version=\"1.0\"?><Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\"/>".into(),
        ));
        let entries: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(n, c)| (n.as_str(), c.as_bytes()))
            .collect();
        zip_of(&entries)
    }

    fn row(n: u32, cells: &[(&str, &str)]) -> String {
        let cells: String = cells
            .iter()
            .map(|(r, v)| {
                if let Some(s) = v.strip_prefix('s') {
                    format!("<c r=\"{r}{n}\" t=\"s\"><v>{s}</v></c>")
                } else {
                    format!("<c r=\"{r}{n}\"><v>{v}</v></c>")
                }
            })
            .collect();
        format!("<row r=\"{n}\">{cells}</row>")
    }

    #[test]
    fn xlsx_with_header_rows_and_sections() {
        let mut rows = row(1, &[("A", "s0"), ("B", "s1")]);
        for n in 2..=61 {
            rows.push_str(&row(n, &[("A", "s2"), ("B", &n.to_string())]));
        }
        let plain = row(3, &[("B", "1.5"), ("C", "s2")]) + &row(4, &[("A", "7")]);
        let bytes = xlsx_of(
            &[("People", &rows), ("Raw", &plain)],
            &["Name", "Age", "Ada"],
        );
        let parsed =
            crate::parse::parse(SourceKind::Xlsx, &bytes, &ParseLimits::default()).unwrap();
        assert_eq!(parsed.pages, 2);
        let paths: Vec<&str> = parsed.sections.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "People > Rows 2-51",
                "People > Rows 52-61",
                "Raw > Rows 3-4"
            ]
        );
        let first = &parsed.sections[0].text;
        assert!(
            first.starts_with("Name: Ada; Age: 2\nName: Ada; Age: 3\n"),
            "{first}"
        );
        assert_eq!(first.lines().count(), 50);
        assert_eq!(parsed.sections[2].text, "1.5 | Ada\n7");
    }

    #[test]
    fn xlsx_cell_cap() {
        let rows = row(1, &[("A", "1"), ("B", "2")]) + &row(2, &[("A", "3"), ("B", "4")]);
        let bytes = xlsx_of(&[("S", &rows)], &[]);
        let limits = ParseLimits {
            max_cells: 3,
            ..ParseLimits::default()
        };
        let err = crate::parse::parse(SourceKind::Xlsx, &bytes, &limits).unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
    }

    #[test]
    fn ods_reads() {
        let content = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
            <office:document-content xmlns:office=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\" \
            xmlns:table=\"urn:oasis:names:tc:opendocument:xmlns:table:1.0\" \
            xmlns:text=\"urn:oasis:names:tc:opendocument:xmlns:text:1.0\" \
            office:version=\"1.2\"><office:body><office:spreadsheet>\
            <table:table table:name=\"Stock\">\
            <table:table-row><table:table-cell office:value-type=\"string\"><text:p>Item</text:p></table:table-cell>\
            <table:table-cell office:value-type=\"string\"><text:p>Count</text:p></table:table-cell></table:table-row>\
            <table:table-row><table:table-cell office:value-type=\"string\"><text:p>Bolts</text:p></table:table-cell>\
            <table:table-cell office:value-type=\"float\" office:value=\"12\"><text:p>12</text:p></table:table-cell></table:table-row>\
            </table:table></office:spreadsheet></office:body></office:document-content>";
        let bytes = zip_of(&[
            ("mimetype", b"application/vnd.oasis.opendocument.spreadsheet"),
            ("content.xml", content.as_bytes()),
            (
                "META-INF/manifest.xml",
                b"<?xml version=\"1.0\"?><manifest:manifest xmlns:manifest=\"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0\"/>",
            ),
        ]);
        assert_eq!(crate::parse::sniff(&bytes), Some(SourceKind::Ods));
        let parsed = crate::parse::parse(SourceKind::Ods, &bytes, &ParseLimits::default()).unwrap();
        assert_eq!(parsed.pages, 1);
        assert_eq!(parsed.sections.len(), 1);
        assert_eq!(parsed.sections[0].path, "Stock > Rows 2-2");
        assert_eq!(parsed.sections[0].text, "Item: Bolts; Count: 12");
    }

    #[test]
    fn bomb_in_a_workbook_is_a_limit() {
        let bytes = zeros_bomb(
            "xl/worksheets/sheet1.xml",
            40,
            &[("xl/workbook.xml", b"<w/>")],
        );
        let err =
            crate::parse::parse(SourceKind::Xlsx, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
    }

    #[test]
    fn not_a_workbook_is_corrupt() {
        let bytes = zip_of(&[("hello.txt", b"hi")]);
        let err =
            crate::parse::parse(SourceKind::Xlsx, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Corrupt { .. }), "{err}");
    }

    #[test]
    fn xls_reads() {
        let bytes = crate::fixtures::xls("Stock", &[&["Item", "Count"], &["Bolts", "12"]]);
        assert_eq!(crate::parse::sniff(&bytes), Some(SourceKind::Xls));
        let parsed = crate::parse::parse(SourceKind::Xls, &bytes, &ParseLimits::default()).unwrap();
        assert_eq!(parsed.pages, 1);
        assert_eq!(parsed.sections.len(), 1);
        assert_eq!(parsed.sections[0].path, "Stock > Rows 2-2");
        assert_eq!(parsed.sections[0].text, "Item: Bolts; Count: 12");
    }

    #[test]
    fn xls_forged_dimensions_are_a_limit() {
        let bytes = crate::fixtures::xls_forged_dimensions();
        assert!(bytes.len() < 8 * 1024, "{}", bytes.len());
        let err =
            crate::parse::parse(SourceKind::Xls, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
        assert_eq!(
            err.to_string(),
            "the spreadsheet declares 4294967295 rows by 65535 columns, more than the limit \
             of 2000000 cells"
        );
    }

    #[test]
    fn xls_cells_spanning_a_huge_grid_are_a_limit() {
        // Two cells at opposite corners of an .xls sheet that declares 1 x 1: calamine's dense
        // grid would be 65,536 x 256 cells.
        let workbook = crate::fixtures::biff8_workbook(
            "Wide",
            (0, 1, 0, 1),
            &[(0, 0, "top left"), (65_535, 255, "bottom right")],
        );
        let bytes = crate::parse::ole::single_stream("Workbook", &workbook);
        let err =
            crate::parse::parse(SourceKind::Xls, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
        assert_eq!(
            err.to_string(),
            "the spreadsheet's cells span 65536 rows by 256 columns, more than the limit of \
             2000000 cells"
        );
    }

    #[test]
    fn xls_compound_file_loops_are_corrupt() {
        let mut bytes = crate::fixtures::xls("Stock", &[&["a"]]);
        // The workbook stream (padded to 4096 bytes) fills sectors 0-7, the directory sector 8,
        // the FAT sector 9: make the stream's fourth sector point back at its first.
        let fat = 512 * (1 + 9);
        bytes[fat + 3 * 4..fat + 4 * 4].copy_from_slice(&0u32.to_le_bytes());
        let err =
            crate::parse::parse(SourceKind::Xls, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("loop"), "{err}");
    }

    #[test]
    fn ods_repeated_rows_are_a_limit() {
        let bytes = crate::fixtures::ods_repeated_rows();
        assert!(bytes.len() < 4 * 1024, "{}", bytes.len());
        let err =
            crate::parse::parse(SourceKind::Ods, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
        assert_eq!(
            err.to_string(),
            "the spreadsheet repeats its rows and columns to 6000 rows by 16384 columns, more \
             than the limit of 2000000 cells"
        );
    }

    const STRING_CELL: &str =
        "<table:table-cell office:value-type=\"string\"><text:p>Bolts</text:p>\
        </table:table-cell>";

    #[test]
    fn ods_trailing_repeats_as_libreoffice_writes_them_read() {
        // LibreOffice repeats the empty rest of every row and of the sheet up to its limits.
        let content = format!(
            "<table:table-row>{STRING_CELL}<table:table-cell table:number-columns-repeated=\"1023\"/>\
             </table:table-row><table:table-row table:number-rows-repeated=\"1048575\">\
             <table:table-cell table:number-columns-repeated=\"1024\"/></table:table-row>"
        );
        let bytes = crate::fixtures::ods("Stock", &content);
        let parsed = crate::parse::parse(SourceKind::Ods, &bytes, &ParseLimits::default()).unwrap();
        assert_eq!(parsed.sections[0].text, "Bolts");
        // An empty gap between rows is expanded by calamine, and counted: 3 columns by a
        // million rows.
        let content = format!(
            "<table:table-row>{STRING_CELL}<table:table-cell/>{STRING_CELL}</table:table-row>\
             <table:table-row table:number-rows-repeated=\"1000000\"><table:table-cell/></table:table-row>\
             <table:table-row>{STRING_CELL}</table:table-row>"
        );
        let bytes = crate::fixtures::ods("Gap", &content);
        let err =
            crate::parse::parse(SourceKind::Ods, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
    }

    #[test]
    fn ods_repeated_text_is_a_limit() {
        // A cell whose text is a billion spaces, and a long text repeated along a row and
        // down a few rows: both are the text calamine would build.
        let spaces = "<table:table-row><table:table-cell office:value-type=\"string\">\
            <text:p><text:s text:c=\"1000000000\"/></text:p></table:table-cell></table:table-row>";
        let long = "x".repeat(10_000);
        let repeated = format!(
            "<table:table-row table:number-rows-repeated=\"100\"><table:table-cell \
             table:number-columns-repeated=\"100\" office:value-type=\"string\" \
             office:string-value=\"{long}\"/></table:table-row>"
        );
        for content in [spaces.to_string(), repeated] {
            let bytes = crate::fixtures::ods("Text", &content);
            let err =
                crate::parse::parse(SourceKind::Ods, &bytes, &ParseLimits::default()).unwrap_err();
            assert!(matches!(err, ParseError::Limit(_)), "{err}");
            assert!(err.to_string().contains("limit of 52428800 bytes"), "{err}");
        }
    }

    #[test]
    fn ods_ending_inside_a_table_is_corrupt() {
        // calamine reads past the end of such a file for ever.
        let bytes = zip_of(&[
            (
                "mimetype",
                b"application/vnd.oasis.opendocument.spreadsheet",
            ),
            (
                "content.xml",
                b"<office:document-content><office:body><office:spreadsheet>\
                  <table:table table:name=\"Cut\"><table:table-row><table:table-cell/>\
                  </table:table-row>",
            ),
        ]);
        let err =
            crate::parse::parse(SourceKind::Ods, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Corrupt { .. }), "{err}");
    }

    #[test]
    fn xlsx_declaring_billions_of_shared_strings_is_a_limit() {
        let rows = row(1, &[("A", "s0")]);
        let mut bytes = xlsx_of(&[("S", &rows)], &["only"]);
        // Rewrite the archive with a forged uniqueCount.
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes.as_slice())).unwrap();
        let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
        for i in 0..archive.len() {
            let mut entry = archive.by_index(i).unwrap();
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut data).unwrap();
            let name = entry.name().unwrap().to_string();
            if name == "xl/sharedStrings.xml" {
                let text = String::from_utf8(data).unwrap();
                data = text
                    .replace("<sst ", "<sst uniqueCount=\"100000000000\" ")
                    .into_bytes();
            }
            entries.push((name, data));
        }
        let refs: Vec<(&str, &[u8])> = entries
            .iter()
            .map(|(n, d)| (n.as_str(), d.as_slice()))
            .collect();
        bytes = zip_of(&refs);
        let err =
            crate::parse::parse(SourceKind::Xlsx, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
        assert_eq!(
            err.to_string(),
            "the spreadsheet declares 100000000000 shared strings, more than the limit of \
             2000000 cells"
        );
    }

    #[test]
    fn xlsx_zip_bomb_is_a_limit() {
        let bytes = crate::fixtures::xlsx_zip_bomb();
        assert!(bytes.len() < 2 * 1024 * 1024, "{}", bytes.len());
        let err =
            crate::parse::parse(SourceKind::Xlsx, &bytes, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
        assert!(err.to_string().contains("limit"), "{err}");
    }

    #[test]
    fn header_only_and_extra_columns() {
        let mut out = Sections::new(1000);
        let cell = |t: &str, textual| Cell {
            text: t.into(),
            textual,
        };
        format_rows(
            vec![(1, vec![cell("A", true), cell("B", true)])],
            None,
            &mut out,
        )
        .unwrap();
        format_rows(
            vec![
                (1, vec![cell("x", true), cell("", false)]),
                (2, vec![cell("1", false), cell("", false), cell("3", false)]),
            ],
            Some("S"),
            &mut out,
        )
        .unwrap();
        let got: Vec<(String, String)> = out
            .into_vec()
            .into_iter()
            .map(|s| (s.path, s.text))
            .collect();
        assert_eq!(
            got,
            vec![
                ("Rows 1-1".to_string(), "A | B".to_string()),
                ("S > Rows 2-2".to_string(), "x: 1; Column 3: 3".to_string()),
            ]
        );
    }
}
