//! ODS workbooks are checked here before calamine reads them.
//!
//! calamine reads every table of `content.xml` when it opens the file, and what it allocates
//! comes from the markup, not the cells: a cell with `table:number-columns-repeated` is pushed
//! that many times (at most 16,384 columns a row) with its value cloned each time, a `text:s`
//! pushes `text:c` spaces, and each table becomes a dense grid from its first to its last
//! non-empty row, every `table:number-rows-repeated` row expanded, as wide as its widest
//! non-empty span. Empty cells and rows after the last non-empty one are never pushed, which
//! is why LibreOffice's `number-rows-repeated="1048576"` for the empty rest of a sheet costs
//! nothing and passes here.
//!
//! [`check`] streams `content.xml` through the same XML reader with the same settings and
//! follows calamine's reading (`parse_content`, `read_table`, `read_row`, `get_datatype`) step
//! by step, counting instead of storing: cells pushed for each table and the grid of each
//! table against [`ParseLimits::max_cells`] (grids of all tables together, since calamine
//! keeps them all), and the bytes of cloned values and spaces against
//! [`ParseLimits::max_text_bytes`]. Where calamine would stop with an error, the walk stops
//! and the file is refused as corrupt (fail closed: a wrong guess about calamine refuses a
//! file, it never lets the rest of one go unchecked).

use std::io::{BufReader, Cursor, Read};

use quick_xml::events::{BytesStart, Event};
use quick_xml::name::QName;
use quick_xml::Reader;

use super::sink::text_limit;
use super::{ParseError, ParseLimits};

/// calamine's cap on the columns of one row.
const MAX_COLUMNS: u64 = 16_384;

/// Whether the walk may go on: `Ok(None)` where calamine fails (the file is then refused).
type Step<T> = Result<Option<T>, ParseError>;

pub(crate) fn check(bytes: &[u8], limits: &ParseLimits) -> Result<(), ParseError> {
    let Ok(mut zip) = zip::ZipArchive::new(Cursor::new(bytes)) else {
        return Ok(());
    };
    let Ok(entry) = zip.by_name("content.xml") else {
        return Ok(());
    };
    let mut reader = Reader::from_reader(BufReader::new(entry));
    let config = reader.config_mut();
    config.check_end_names = false;
    config.trim_text(false);
    config.check_comments = false;
    config.expand_empty_elements = true;
    let mut walk = Walk {
        reader,
        limits,
        grid_left: limits.max_cells,
        text_left: limits.max_text_bytes as u64,
    };
    // Fail closed: where the walk stops because calamine would fail, the file is refused
    // here, so that a wrong guess about calamine can never let the rest go unchecked.
    if walk.content()? {
        Ok(())
    } else {
        Err(ParseError::corrupt(
            "ods",
            "the spreadsheet's content could not be read",
        ))
    }
}

struct Walk<'l, R: Read> {
    reader: Reader<BufReader<R>>,
    limits: &'l ParseLimits,
    grid_left: u64,
    text_left: u64,
}

/// calamine's raw attribute iterator (`attrs.rs`): `key="value"` pairs, an error on a key
/// without `=` or an unquoted value.
pub(crate) fn raw_attrs(raw: &str) -> impl Iterator<Item = Result<(&str, &str), ()>> {
    let bytes = raw.as_bytes();
    let mut pos = 0usize;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        if pos >= bytes.len() {
            return None;
        }
        let key_start = pos;
        while pos < bytes.len() && bytes[pos] != b'=' {
            pos += 1;
        }
        if pos >= bytes.len() {
            done = true;
            return Some(Err(()));
        }
        let key = raw[key_start..pos].trim_ascii_end();
        pos += 1;
        while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        let quote = bytes.get(pos).copied();
        if quote != Some(b'"') && quote != Some(b'\'') {
            done = true;
            return Some(Err(()));
        }
        pos += 1;
        let start = pos;
        while pos < bytes.len() && Some(bytes[pos]) != quote {
            pos += 1;
        }
        let value = &raw[start..pos];
        if pos < bytes.len() {
            pos += 1;
        }
        Some(Ok((key, value)))
    })
}

/// The first attribute `name` (`Err` where calamine's scan fails before finding it).
fn raw_attr<'a>(e: &'a BytesStart<'_>, name: &str) -> Result<Option<&'a str>, ()> {
    for attr in raw_attrs(e.attributes_raw()) {
        let (key, value) = attr?;
        if key == name {
            return Ok(Some(value));
        }
    }
    Ok(None)
}

/// A row as calamine pushes it: entries pushed, the first and last non-empty ones, and the
/// bytes of the values pushed (cloned again for each repeat of the row).
#[derive(Default)]
struct Row {
    pushed: u64,
    first: Option<u64>,
    last: u64,
    text: u64,
}

/// One table's grid so far.
#[derive(Default)]
struct Table {
    pushed: u64,
    /// Row elements and expanded rows from the first non-empty row to the last, and those
    /// seen since the last non-empty row (counted in if another non-empty row follows).
    elements: u64,
    rows: u64,
    pending_elements: u64,
    pending_rows: u64,
    cols: Option<(u64, u64)>,
}

impl Table {
    fn cells(&self) -> (u64, u64, u64) {
        let width = self.cols.map_or(0, |(lo, hi)| hi + 1 - lo);
        let cells = self.rows.max(self.elements).saturating_mul(width);
        (self.rows.max(self.elements), width, cells)
    }
}

impl<R: Read> Walk<'_, R> {
    fn event<'b>(&mut self, buf: &'b mut Vec<u8>) -> Step<Event<'b>> {
        buf.clear();
        Ok(self.reader.read_event_into(buf).ok())
    }

    fn charge_text(&mut self, bytes: u64) -> Result<(), ParseError> {
        self.text_left = self
            .text_left
            .checked_sub(bytes)
            .ok_or_else(|| text_limit(self.limits.max_text_bytes))?;
        Ok(())
    }

    /// calamine's `parse_content`: `true` when the walk reached the end, `false` where it
    /// stopped because calamine would fail there.
    fn content(&mut self) -> Result<bool, ParseError> {
        let mut buf = Vec::new();
        loop {
            let Some(event) = self.event(&mut buf)? else {
                return Ok(false);
            };
            match event {
                Event::Start(e) if e.name() == QName("table:table") => {
                    match raw_attr(&e, "table:style-name") {
                        Err(()) => return Ok(false),
                        Ok(Some(v)) if quick_xml::escape::unescape(v).is_err() => return Ok(false),
                        Ok(_) => {}
                    }
                    match raw_attr(&e, "table:name") {
                        Err(()) => return Ok(false),
                        Ok(Some(v)) => {
                            if quick_xml::escape::unescape(v).is_err() {
                                return Ok(false);
                            }
                            if self.table()?.is_none() {
                                return Ok(false);
                            }
                        }
                        Ok(None) => {}
                    }
                }
                Event::Start(e)
                    if e.name() == QName("table:named-expressions")
                        && self.named_expressions()?.is_none() =>
                {
                    return Ok(false)
                }
                Event::Eof => return Ok(true),
                _ => {}
            }
        }
    }

    /// calamine's `read_named_expressions`, which only has to be skipped the same way.
    fn named_expressions(&mut self) -> Step<()> {
        let mut buf = Vec::new();
        loop {
            let Some(event) = self.event(&mut buf)? else {
                return Ok(None);
            };
            match event {
                Event::Start(e)
                    if e.name() == QName("table:named-range")
                        || e.name() == QName("table:named-expression") =>
                {
                    for attr in raw_attrs(e.attributes_raw()) {
                        let Ok((key, value)) = attr else {
                            return Ok(None);
                        };
                        if matches!(
                            key,
                            "table:name" | "table:cell-range-address" | "table:expression"
                        ) && quick_xml::escape::unescape(value).is_err()
                        {
                            return Ok(None);
                        }
                    }
                }
                Event::End(e)
                    if e.name() == QName("table:named-range")
                        || e.name() == QName("table:named-expression") => {}
                Event::End(e) if e.name() == QName("table:named-expressions") => {
                    return Ok(Some(()))
                }
                _ => return Ok(None),
            }
        }
    }

    /// calamine's `read_table`, then its `get_range` grid charged against the cell limit.
    fn table(&mut self) -> Step<()> {
        let mut table = Table::default();
        let mut buf = Vec::new();
        let mut total_rows: u64 = 0;
        loop {
            let Some(event) = self.event(&mut buf)? else {
                return Ok(None);
            };
            match event {
                Event::Start(e) if e.name() == QName("table:table-row") => {
                    let repeats = match raw_attr(&e, "table:number-rows-repeated") {
                        Err(()) => return Ok(None),
                        Ok(None) => 1,
                        Ok(Some(v)) => match quick_xml::escape::unescape(v)
                            .ok()
                            .and_then(|v| v.parse::<usize>().ok())
                        {
                            Some(n) => n as u64,
                            None => return Ok(None),
                        },
                    };
                    let repeats = repeats.min(1_048_576u64.saturating_sub(total_rows));
                    total_rows += repeats;
                    let Some(row) = self.row()? else {
                        return Ok(None);
                    };
                    self.add_row(&mut table, &row, repeats)?;
                }
                Event::End(e) if e.name() == QName("table:table") => {
                    self.grid_left -= table.cells().2;
                    return Ok(Some(()));
                }
                // calamine reads past the end of the file for ever here.
                Event::Eof => return Err(never_ends()),
                _ => {}
            }
        }
    }

    fn add_row(&mut self, table: &mut Table, row: &Row, repeats: u64) -> Result<(), ParseError> {
        let max = self.limits.max_cells;
        table.pushed = table.pushed.saturating_add(row.pushed);
        if table.pushed > max {
            return Err(ParseError::Limit(format!(
                "the spreadsheet's rows hold more than the limit of {max} cells"
            )));
        }
        match row.first {
            None => {
                if table.cols.is_some() {
                    table.pending_elements += 1;
                    table.pending_rows = table.pending_rows.saturating_add(repeats);
                }
            }
            Some(first) => {
                table.elements += table.pending_elements + 1;
                table.rows = table
                    .rows
                    .saturating_add(table.pending_rows)
                    .saturating_add(repeats);
                table.pending_elements = 0;
                table.pending_rows = 0;
                table.cols = Some(match table.cols {
                    Some((lo, hi)) => (lo.min(first), hi.max(row.last)),
                    None => (first, row.last),
                });
                let (rows, cols, cells) = table.cells();
                if cells > self.grid_left {
                    return Err(ParseError::Limit(if cells > max {
                        format!(
                            "the spreadsheet repeats its rows and columns to {rows} rows by \
                             {cols} columns, more than the limit of {max} cells"
                        )
                    } else {
                        format!("the spreadsheet's sheets span more than the limit of {max} cells")
                    }));
                }
                // calamine's grid holds a clone of the row's values for each repeat.
                self.charge_text(row.text.saturating_mul(repeats))?;
            }
        }
        Ok(())
    }

    /// calamine's `read_row`: what one row element pushes.
    fn row(&mut self) -> Step<Row> {
        let mut row = Row::default();
        let mut empty_repeats = 0u64;
        let mut buf = Vec::new();
        loop {
            let Some(event) = self.event(&mut buf)? else {
                return Ok(None);
            };
            match event {
                Event::Start(e)
                    if e.name() == QName("table:table-cell")
                        || e.name() == QName("table:covered-table-cell") =>
                {
                    let repeats = match raw_attr(&e, "table:number-columns-repeated") {
                        Err(()) => return Ok(None),
                        Ok(None) => 1,
                        Ok(Some(v)) => match v.parse::<usize>() {
                            Ok(n) => n as u64,
                            Err(_) => return Ok(None),
                        },
                    };
                    let name = if e.name() == QName("table:table-cell") {
                        QName("table:table-cell")
                    } else {
                        QName("table:covered-table-cell")
                    };
                    let Some(cell) = self.cell(&e)? else {
                        return Ok(None);
                    };
                    row.pushed += empty_repeats.min(MAX_COLUMNS - row.pushed);
                    empty_repeats = 0;
                    let repeats = repeats.min(MAX_COLUMNS - row.pushed);
                    if cell.empty {
                        empty_repeats = repeats;
                    } else {
                        let text = cell.bytes.saturating_mul(repeats);
                        self.charge_text(text)?;
                        row.text = row.text.saturating_add(text);
                        if repeats > 0 {
                            row.first.get_or_insert(row.pushed);
                            row.last = row.pushed + repeats - 1;
                        }
                        row.pushed += repeats;
                    }
                    if !cell.closed {
                        let mut skip = Vec::new();
                        if self.reader.read_to_end_into(name, &mut skip).is_err() {
                            return Ok(None);
                        }
                    }
                }
                Event::End(e) if e.name() == QName("table:table-row") => return Ok(Some(row)),
                _ => return Ok(None),
            }
        }
    }

    /// calamine's `get_datatype`: whether the cell is empty, the bytes of its value and
    /// formula (cloned once per repeat), and whether its content was read to its end tag.
    fn cell(&mut self, e: &BytesStart<'_>) -> Step<Cell> {
        let mut is_string = false;
        let mut is_error = false;
        let mut value_set = false;
        let mut value_bytes = 0u64;
        let mut empty_string = false;
        let mut formula_bytes = 0u64;
        for attr in raw_attrs(e.attributes_raw()) {
            let Ok((key, value)) = attr else {
                return Ok(None);
            };
            match key {
                // calamine fails on a number it cannot parse; going on is never less safe.
                "office:value" if !value_set => value_set = true,
                "office:string-value" | "office:date-value" | "office:time-value" if !value_set => {
                    let Ok(decoded) = quick_xml::escape::unescape(value) else {
                        return Ok(None);
                    };
                    value_bytes = decoded.len() as u64;
                    empty_string = key == "office:string-value" && decoded.is_empty();
                    value_set = true;
                }
                "office:boolean-value" if !value_set => value_set = true,
                "office:value-type" if !value_set => is_string = value == "string",
                "calcext:value-type" => is_error = value == "error",
                "table:formula" => {
                    let Ok(decoded) = quick_xml::escape::unescape(value) else {
                        return Ok(None);
                    };
                    formula_bytes = decoded.len() as u64;
                }
                _ => {}
            }
        }
        if (!value_set && is_string) || (is_error && empty_string) {
            let Some(text) = self.cell_text()? else {
                return Ok(None);
            };
            return Ok(Some(Cell {
                empty: false,
                bytes: text + formula_bytes,
                closed: true,
            }));
        }
        Ok(Some(Cell {
            empty: !value_set && formula_bytes == 0,
            bytes: value_bytes + formula_bytes,
            closed: false,
        }))
    }

    /// The bytes of a string cell's content, up to its end tag.
    fn cell_text(&mut self) -> Step<u64> {
        let mut bytes = 0u64;
        let mut first_paragraph = true;
        let mut buf = Vec::new();
        loop {
            let Some(event) = self.event(&mut buf)? else {
                return Ok(None);
            };
            let add = match event {
                Event::Text(t) => t.len() as u64,
                Event::GeneralRef(_) => 4,
                Event::End(e)
                    if e.name() == QName("table:table-cell")
                        || e.name() == QName("table:covered-table-cell") =>
                {
                    return Ok(Some(bytes));
                }
                Event::Start(e) if e.name() == QName("office:annotation") => {
                    loop {
                        match self.event(&mut buf)? {
                            None => return Ok(None),
                            // calamine reads past the end of the file for ever here.
                            Some(Event::Eof) => return Err(never_ends()),
                            Some(Event::End(e)) if e.name() == QName("office:annotation") => break,
                            Some(_) => {}
                        }
                    }
                    0
                }
                Event::Start(e) if e.name() == QName("text:p") => {
                    if first_paragraph {
                        first_paragraph = false;
                        0
                    } else {
                        1
                    }
                }
                Event::Start(e) if e.name() == QName("text:s") => match raw_attr(&e, "text:c") {
                    Err(()) => return Ok(None),
                    Ok(None) => 1,
                    // calamine reads the count as an `i32` and pushes nothing for a negative.
                    Ok(Some(v)) => match quick_xml::escape::unescape(v)
                        .ok()
                        .and_then(|v| v.parse::<i32>().ok())
                    {
                        Some(n) => u64::try_from(n).unwrap_or(0),
                        None => return Ok(None),
                    },
                },
                Event::Start(e)
                    if e.name() == QName("text:tab") || e.name() == QName("text:line-break") =>
                {
                    1
                }
                Event::Eof => return Ok(None),
                _ => 0,
            };
            bytes = bytes.saturating_add(add);
            // One cell's text alone may already be over the limit (a `text:s` of billions).
            if bytes > self.text_left {
                return Err(text_limit(self.limits.max_text_bytes));
            }
        }
    }
}

fn never_ends() -> ParseError {
    ParseError::corrupt(
        "ods",
        "the spreadsheet's content ends in the middle of a table",
    )
}

struct Cell {
    empty: bool,
    bytes: u64,
    closed: bool,
}
