//! CSV: the delimiter (`,`, `;` or tab) is sniffed from the first line, a UTF-8 BOM dropped and
//! UTF-16 with a BOM decoded. Ragged rows and quoted newlines are fine. Rows are formatted like
//! spreadsheet rows ([`super::sheet::format_rows`]): header-aware `Name: value` lines, 50 rows
//! to a section with path `Rows A-B` (the header is row 1; a row is a record, so a quoted
//! newline does not shift the numbers).

use super::sheet::{format_rows, Cell};
use super::sink::{collapse_whitespace, Sections};
use super::{ParseError, ParseLimits};
use crate::model::Parsed;

pub(crate) fn parse(bytes: &[u8], limits: &ParseLimits) -> Result<Parsed, ParseError> {
    let text = super::text::decode(bytes);
    let delimiter = sniff_delimiter(&text);
    let mut reader = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .from_reader(text.as_bytes());
    let mut rows = Vec::new();
    let mut bytes_seen = 0usize;
    for (index, record) in reader.byte_records().enumerate() {
        let record = record.map_err(|e| {
            tracing::debug!(error = %e, "csv read error");
            ParseError::corrupt("csv", format!("row {} cannot be read", index + 1))
        })?;
        bytes_seen = bytes_seen.saturating_add(record.as_slice().len());
        if bytes_seen > limits.max_text_bytes {
            return Err(super::sink::text_limit(limits.max_text_bytes));
        }
        let cells = record
            .iter()
            .map(|field| {
                let text = collapse_whitespace(&String::from_utf8_lossy(field));
                let textual = !text.is_empty() && text.parse::<f64>().is_err();
                Cell { text, textual }
            })
            .collect::<Vec<_>>();
        rows.push((u32::try_from(index + 1).unwrap_or(u32::MAX), cells));
    }
    let mut out = Sections::new(limits.max_text_bytes);
    format_rows(rows, None, &mut out)?;
    Ok(Parsed {
        sections: out.into_vec(),
        images: Vec::new(),
        pages: 1,
    })
}

/// The most frequent of `,`, `;` and tab outside quotes on the first line. Ties go to tab,
/// then `;` (both rarely appear inside values), then `,`.
fn sniff_delimiter(text: &str) -> u8 {
    let mut counts = [0usize; 3];
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            '\n' if !quoted => break,
            ',' if !quoted => counts[0] += 1,
            ';' if !quoted => counts[1] += 1,
            '\t' if !quoted => counts[2] += 1,
            _ => {}
        }
    }
    let delimiters = [b',', b';', b'\t'];
    let mut best = 0;
    for i in 1..3 {
        if counts[i] >= counts[best] && counts[i] > 0 {
            best = i;
        }
    }
    delimiters[best]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SourceKind;

    fn sections(bytes: &[u8]) -> Vec<(String, String)> {
        crate::parse::parse(SourceKind::Csv, bytes, &ParseLimits::default())
            .unwrap()
            .sections
            .into_iter()
            .map(|s| (s.path, s.text))
            .collect()
    }

    #[test]
    fn header_rows_with_bom_ragged_and_quoted_newlines() {
        let csv = "\u{FEFF}name,city,notes\r\nAda,London,\"likes\nmaths\"\r\nAlan,,\r\nGrace,Arlington,x,extra\r\n";
        assert_eq!(
            sections(csv.as_bytes()),
            vec![(
                "Rows 2-4".to_string(),
                "name: Ada; city: London; notes: likes maths\nname: Alan\n\
                 name: Grace; city: Arlington; notes: x; Column 4: extra"
                    .to_string()
            )]
        );
    }

    #[test]
    fn semicolons_and_tabs_are_sniffed() {
        assert_eq!(
            sections(b"a;b\n1;2\n"),
            vec![("Rows 2-2".to_string(), "a: 1; b: 2".to_string())]
        );
        assert_eq!(
            sections(b"a\tb,c\n1\t2,3\n"),
            vec![("Rows 2-2".to_string(), "a: 1; b,c: 2,3".to_string())]
        );
    }

    #[test]
    fn no_header_joins_cells_and_sections_of_fifty() {
        let csv: String = (1..=120).map(|i| format!("{i},{}\n", i * 2)).collect();
        let got = sections(csv.as_bytes());
        let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, vec!["Rows 1-50", "Rows 51-100", "Rows 101-120"]);
        assert!(got[0].1.starts_with("1 | 2\n2 | 4\n"), "{}", got[0].1);
    }

    #[test]
    fn only_empty_fields_is_empty() {
        let err =
            crate::parse::parse(SourceKind::Csv, b",,\n,,\n", &ParseLimits::default()).unwrap_err();
        assert!(matches!(err, ParseError::Empty), "{err}");
    }
}
