//! Legacy `.xls` workbooks are checked here before calamine reads them.
//!
//! calamine parses the whole workbook when it opens it, and on the way it allocates from what
//! the file declares: each sheet's DIMENSIONS record reserves room for rows x columns cells,
//! each sheet's cells become a dense grid spanning the first to the last cell, each LabelSst
//! cell clones its shared string, and the shared string table takes its CONTINUE records one
//! at a time from the front of a vector. A forged header is an allocation the process cannot
//! survive (allocation failure aborts; it is not a panic), so [`prepare`]:
//!
//! 1. takes the `Workbook` (or `Book`) stream out of the compound file with the strict reader
//!    of [`super::ole`];
//! 2. walks its records the way calamine does and refuses, with [`ParseError::Limit`], a
//!    DIMENSIONS record declaring more than [`ParseLimits::max_cells`] cells, sheets whose
//!    cells span more than that many grid cells together, shared strings cloned into cells
//!    beyond [`ParseLimits::max_text_bytes`], and a record continued more than
//!    [`MAX_CONTINUES`] times;
//! 3. returns the checked stream in a fresh compound file, which is what calamine reads.
//!
//! Where calamine would stop with an error before allocating (a truncated record, an unknown
//! value), the walk stops too and leaves the error to calamine.

use super::ole::{self, Compound};
use super::sink::text_limit;
use super::{ParseError, ParseLimits};

/// CONTINUE records after one record. calamine removes them from the front of a vector one by
/// one, so their cost is quadratic; a legitimate shared string table of 50 MB needs about
/// 6,400.
pub(crate) const MAX_CONTINUES: usize = 16_384;

const CONTINUE: u16 = 0x003C;

/// Checks the workbook in the compound file `bytes` and returns a clean compound file holding
/// just its workbook stream.
pub(crate) fn prepare(bytes: &[u8], limits: &ParseLimits) -> Result<Vec<u8>, ParseError> {
    let compound = Compound::open(bytes)?;
    let stream = match compound.stream("Workbook")? {
        Some(stream) => stream,
        None => compound
            .stream("Book")?
            .ok_or_else(|| ParseError::corrupt("xls", "the file holds no workbook stream"))?,
    };
    // The bytes checked are the bytes calamine will read: padded as the clean file stores them.
    let stream = ole::padded(&stream);
    check(&stream, limits)?;
    Ok(ole::single_stream("Workbook", &stream))
}

/// Where the walk stops because calamine would fail: refused here (fail closed), so that a
/// wrong guess about calamine can never let the rest of a workbook go unchecked.
fn unreadable() -> ParseError {
    ParseError::corrupt("xls", "the workbook could not be read")
}

/// One record as calamine's `RecordIter` yields it: its data and the CONTINUE records after it.
struct Record<'a> {
    typ: u16,
    data: &'a [u8],
    cont: std::collections::VecDeque<&'a [u8]>,
}

impl<'a> Record<'a> {
    fn continue_record(&mut self) -> bool {
        match self.cont.pop_front() {
            Some(next) => {
                self.data = next;
                true
            }
            None => false,
        }
    }

    /// Skips `len` bytes across CONTINUE records; `false` where calamine fails.
    fn skip(&mut self, mut len: usize) -> bool {
        while len > 0 {
            if self.data.is_empty() && !self.continue_record() {
                return false;
            }
            let l = len.min(self.data.len());
            self.data = &self.data[l..];
            len -= l;
        }
        true
    }
}

/// calamine's record iterator; `None` at the end of the stream or where calamine fails.
struct Records<'a> {
    stream: &'a [u8],
}

impl<'a> Records<'a> {
    fn next(&mut self) -> Result<Option<Record<'a>>, ParseError> {
        if self.stream.len() < 4 {
            return Ok(None);
        }
        let typ = u16::from_le_bytes([self.stream[0], self.stream[1]]);
        let len = u16::from_le_bytes([self.stream[2], self.stream[3]]) as usize;
        if self.stream.len() < len + 4 {
            return Ok(None);
        }
        let data = &self.stream[4..4 + len];
        self.stream = &self.stream[4 + len..];
        let mut cont = std::collections::VecDeque::new();
        while self.stream.len() > 4 && u16_at(self.stream, 0) == CONTINUE {
            let len = u16_at(self.stream, 2) as usize;
            if self.stream.len() < len + 4 {
                return Ok(None);
            }
            cont.push_back(&self.stream[4..4 + len]);
            self.stream = &self.stream[4 + len..];
            if cont.len() > MAX_CONTINUES {
                return Err(ParseError::Limit(format!(
                    "the workbook continues one record more than {MAX_CONTINUES} times; \
                     the limit is {MAX_CONTINUES}"
                )));
            }
        }
        Ok(Some(Record { typ, data, cont }))
    }
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Walks the workbook stream as calamine's `parse_workbook` does.
pub(crate) fn check(stream: &[u8], limits: &ParseLimits) -> Result<(), ParseError> {
    let mut sheets: Vec<usize> = Vec::new();
    let mut strings: Vec<u64> = Vec::new();
    let mut records = Records { stream };
    while let Some(mut r) = records.next()? {
        match r.typ {
            // FilePass: calamine stops with a password error.
            0x002F if r.data.len() < 2 || u16_at(r.data, 0) != 0 => {
                return Err(ParseError::Encrypted)
            }
            // BoundSheet8: where a sheet's substream starts.
            0x0085 => {
                if r.data.len() < 6 {
                    return Err(unreadable());
                }
                sheets.push(u32_at(r.data, 0) as usize);
            }
            // SST: the shared strings, by length.
            0x00FC => match sst_lengths(&mut r) {
                Some(lengths) => strings = lengths,
                None => return Err(unreadable()),
            },
            0x000A => break,
            _ => {}
        }
    }
    let mut grid_left = limits.max_cells;
    let mut text_left = limits.max_text_bytes as u64;
    for pos in sheets {
        let Some(sheet) = stream.get(pos..) else {
            return Err(unreadable());
        };
        if !check_sheet(sheet, &strings, limits, &mut grid_left, &mut text_left)? {
            return Err(unreadable());
        }
    }
    Ok(())
}

/// The character count of each string of an SST record, as calamine reads them; `None` where
/// calamine fails.
fn sst_lengths(r: &mut Record<'_>) -> Option<Vec<u64>> {
    if r.data.len() < 8 {
        return None;
    }
    r.data = &r.data[8..];
    let mut lengths = Vec::new();
    while !r.data.is_empty() || r.continue_record() {
        if r.data.is_empty() {
            lengths.push(0);
            continue;
        }
        if r.data.len() < 3 {
            return None;
        }
        let cch = u16_at(r.data, 0) as usize;
        let flags = r.data[2];
        r.data = &r.data[3..];
        let mut high_byte = flags & 0x1 != 0;
        let mut runs = 0usize;
        let mut ext = 0usize;
        if flags & 0x8 != 0 {
            if r.data.len() < 2 {
                return None;
            }
            runs = u16_at(r.data, 0) as usize;
            r.data = &r.data[2..];
        }
        if flags & 0x4 != 0 {
            if r.data.len() < 4 {
                return None;
            }
            ext = i32::from_le_bytes([r.data[0], r.data[1], r.data[2], r.data[3]]) as usize;
            r.data = &r.data[4..];
        }
        let mut left = cch;
        while left > 0 {
            let (chars, bytes) = if high_byte {
                let l = (r.data.len() / 2).min(left);
                (l, 2 * l)
            } else {
                let l = r.data.len().min(left);
                (l, l)
            };
            r.data = &r.data[bytes..];
            left -= chars;
            if left > 0 {
                if !r.continue_record() || r.data.is_empty() {
                    return None;
                }
                high_byte = r.data[0] & 0x1 != 0;
                r.data = &r.data[1..];
            }
        }
        if !r.skip(runs * 4) || !r.skip(ext) {
            return None;
        }
        lengths.push(cch as u64);
    }
    Some(lengths)
}

/// The cells' bounding box of one sheet.
#[derive(Default)]
struct Span {
    rows: Option<(u32, u32)>,
    cols: Option<(u32, u32)>,
}

impl Span {
    fn add(&mut self, row: u32, col: u32) {
        let grow = |range: &mut Option<(u32, u32)>, v: u32| {
            *range = Some(match *range {
                Some((lo, hi)) => (lo.min(v), hi.max(v)),
                None => (v, v),
            });
        };
        grow(&mut self.rows, row);
        grow(&mut self.cols, col);
    }

    fn size(&self) -> (u64, u64) {
        match (self.rows, self.cols) {
            (Some((r0, r1)), Some((c0, c1))) => (u64::from(r1 - r0) + 1, u64::from(c1 - c0) + 1),
            _ => (0, 0),
        }
    }
}

/// Walks one sheet substream as calamine does; `Ok(false)` where calamine fails.
fn check_sheet(
    sheet: &[u8],
    strings: &[u64],
    limits: &ParseLimits,
    grid_left: &mut u64,
    text_left: &mut u64,
) -> Result<bool, ParseError> {
    let mut records = Records { stream: sheet };
    let mut span = Span::default();
    let mut seen_bof = false;
    let mut depth = 0usize;
    let mut formula_pos = (0u32, 0u32);
    let mut ok = true;
    while let Some(r) = records.next()? {
        if depth > 0 {
            match r.typ {
                0x0809 => depth += 1,
                0x000A => depth -= 1,
                _ => {}
            }
            continue;
        }
        let d = r.data;
        let pos = |d: &[u8]| (u32::from(u16_at(d, 0)), u32::from(u16_at(d, 2)));
        match r.typ {
            0x0809 => {
                if seen_bof {
                    depth += 1;
                } else {
                    seen_bof = true;
                }
            }
            0x0200 => {
                let Some((rows, cols)) = dimensions(d) else {
                    ok = false;
                    break;
                };
                if rows.saturating_mul(cols) > limits.max_cells {
                    return Err(ParseError::Limit(format!(
                        "the spreadsheet declares {rows} rows by {cols} columns, more than the \
                         limit of {} cells",
                        limits.max_cells
                    )));
                }
            }
            // Number, Label, RString, BoolErr, Rk: a cell at (row, col).
            0x0203 | 0x0204 | 0x00D6 | 0x0205 | 0x027E => {
                let min = match r.typ {
                    0x0203 => 14,
                    0x0205 => 8,
                    0x027E => 10,
                    _ => 6,
                };
                if d.len() < min {
                    ok = false;
                    break;
                }
                let (row, col) = pos(d);
                span.add(row, col);
            }
            // String: the value of the last formula.
            0x0207 => span.add(formula_pos.0, formula_pos.1),
            // LabelSst: a clone of a shared string.
            0x00FD => {
                if d.len() < 10 {
                    ok = false;
                    break;
                }
                if let Some(len) = strings.get(u32_at(d, 6) as usize) {
                    let (row, col) = pos(d);
                    span.add(row, col);
                    *text_left = text_left
                        .checked_sub(*len)
                        .ok_or_else(|| text_limit(limits.max_text_bytes))?;
                }
            }
            // MulRk: cells from the first column on.
            0x00BD => {
                if d.len() < 6 {
                    ok = false;
                    break;
                }
                let (row, first) = pos(d);
                let last = u16_at(d, d.len() - 2);
                let count = last.wrapping_sub(first as u16).wrapping_add(1) as usize;
                if d.len() != 6 + 6 * count {
                    ok = false;
                    break;
                }
                if count > 0 {
                    span.add(row, first);
                    span.add(row, first + count as u32 - 1);
                }
            }
            0x0006 => {
                if d.len() < 20 {
                    ok = false;
                    break;
                }
                formula_pos = pos(d);
                span.add(formula_pos.0, formula_pos.1);
            }
            0x000A => break,
            _ => {}
        }
    }
    let (rows, cols) = span.size();
    let grid = rows * cols;
    if grid > *grid_left {
        return Err(ParseError::Limit(if grid > limits.max_cells {
            format!(
                "the spreadsheet's cells span {rows} rows by {cols} columns, more than the \
                 limit of {} cells",
                limits.max_cells
            )
        } else {
            format!(
                "the spreadsheet's sheets span more than the limit of {} cells",
                limits.max_cells
            )
        }));
    }
    *grid_left -= grid;
    Ok(ok)
}

/// Rows and columns of a DIMENSIONS record, computed as calamine computes them (with its
/// wrapping arithmetic, so that a first row after the last one is as large as it is for
/// calamine); `None` where calamine fails.
fn dimensions(d: &[u8]) -> Option<(u64, u64)> {
    let (rf, rl, mut cf, cl) = match d.len() {
        10 => (
            u32::from(u16_at(d, 0)),
            u32::from(u16_at(d, 2)),
            u32::from(u16_at(d, 4)),
            u32::from(u16_at(d, 6)),
        ),
        14 | 16 => (
            u32_at(d, 0),
            u32_at(d, 4),
            u32::from(u16_at(d, 8)),
            u32::from(u16_at(d, 10)),
        ),
        _ => return None,
    };
    if 0xFF < cf || cl < cf {
        cf = 0;
    }
    let (start, end) = if 1 <= rl && 1 <= cl {
        ((rf, cf), (rl - 1, cl - 1))
    } else {
        ((rf, cf), (rf, cf))
    };
    let rows = end.0.wrapping_sub(start.0).wrapping_add(1);
    let cols = end.1.wrapping_sub(start.1).wrapping_add(1);
    Some((u64::from(rows), u64::from(cols)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(typ: u16, data: &[u8]) -> Vec<u8> {
        let mut out = typ.to_le_bytes().to_vec();
        out.extend_from_slice(&(data.len() as u16).to_le_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn dimensions_as_calamine_reads_them() {
        let biff8 = |rf: u32, rl: u32, cf: u16, cl: u16| {
            let mut d = rf.to_le_bytes().to_vec();
            d.extend_from_slice(&rl.to_le_bytes());
            d.extend_from_slice(&cf.to_le_bytes());
            d.extend_from_slice(&cl.to_le_bytes());
            d.extend_from_slice(&[0, 0]);
            d
        };
        assert_eq!(dimensions(&biff8(0, 10, 0, 3)), Some((10, 3)));
        assert_eq!(
            dimensions(&biff8(0, u32::MAX, 0, u16::MAX)),
            Some((4_294_967_295, 65_535))
        );
        // A first row after the last wraps to billions of rows, as it does for calamine.
        assert_eq!(dimensions(&biff8(10, 5, 0, 1)).unwrap().0, 4_294_967_291);
        assert_eq!(dimensions(&biff8(0, 0, 0, 0)), Some((1, 1)));
        assert_eq!(dimensions(&[0; 12]), None);
    }

    #[test]
    fn shared_string_lengths_across_continues() {
        // Two strings: "abc" (compressed), then "hello" split over a CONTINUE that switches
        // to two-byte characters.
        let mut sst = vec![0u8; 8];
        sst.extend_from_slice(&[3, 0, 0]);
        sst.extend_from_slice(b"abc");
        sst.extend_from_slice(&[5, 0, 0]);
        sst.extend_from_slice(b"he");
        let mut cont = vec![1u8];
        for c in "llo".encode_utf16() {
            cont.extend_from_slice(&c.to_le_bytes());
        }
        let mut stream = record(0x00FC, &sst);
        stream.extend(record(CONTINUE, &cont));
        let mut records = Records { stream: &stream };
        let mut r = records.next().unwrap().unwrap();
        assert_eq!(sst_lengths(&mut r), Some(vec![3, 5]));
    }

    #[test]
    fn too_many_continues_is_a_limit() {
        let mut stream = record(0x00FC, &[0; 8]);
        for _ in 0..=MAX_CONTINUES {
            stream.extend(record(CONTINUE, &[]));
        }
        stream.extend(record(0x000A, &[]));
        let err = check(&stream, &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
        assert!(err.to_string().contains("16384"), "{err}");
    }
}
