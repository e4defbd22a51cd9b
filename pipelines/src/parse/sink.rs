//! Shared output plumbing: a heading outline that turns paragraphs into [`Section`]s, with the
//! output-text cap ([`super::ParseLimits::max_text_bytes`]) enforced in one place.

use super::ParseError;
use crate::model::Section;

/// Collects sections and counts their bytes against the text cap.
#[derive(Debug)]
pub(crate) struct Sections {
    sections: Vec<Section>,
    bytes: usize,
    max_bytes: usize,
}

impl Sections {
    pub(crate) fn new(max_bytes: usize) -> Sections {
        Sections {
            sections: Vec::new(),
            bytes: 0,
            max_bytes,
        }
    }

    /// Adds a section; blank text is dropped.
    pub(crate) fn push(&mut self, path: String, text: String) -> Result<(), ParseError> {
        let text = text.trim().to_string();
        if text.is_empty() {
            return Ok(());
        }
        self.bytes = self.bytes.saturating_add(text.len() + path.len());
        if self.bytes > self.max_bytes {
            return Err(text_limit(self.max_bytes));
        }
        self.sections.push(Section { path, text });
        Ok(())
    }

    pub(crate) fn len(&self) -> usize {
        self.sections.len()
    }

    pub(crate) fn into_vec(self) -> Vec<Section> {
        self.sections
    }
}

pub(crate) fn text_limit(max_bytes: usize) -> ParseError {
    ParseError::Limit(format!(
        "the document's text is longer than the limit of {max_bytes} bytes"
    ))
}

/// A heading tree with the text under the current heading. A new section starts each time the
/// heading path changes; paragraphs are separated by blank lines, lines of one block (list
/// items, table rows) by single newlines.
#[derive(Debug)]
pub(crate) struct Outline {
    out: Sections,
    headings: Vec<(u8, String)>,
    /// Finished paragraphs of the current section.
    paragraphs: Vec<String>,
    /// The block being built line by line.
    block: Vec<String>,
    /// Bytes held in `paragraphs` and `block`, checked against the cap as text arrives.
    pending: usize,
}

impl Outline {
    pub(crate) fn new(max_bytes: usize) -> Outline {
        Outline {
            out: Sections::new(max_bytes),
            headings: Vec::new(),
            paragraphs: Vec::new(),
            block: Vec::new(),
            pending: 0,
        }
    }

    /// A heading of `level` (1 = outermost): closes the current section.
    pub(crate) fn heading(&mut self, level: u8, text: &str) -> Result<(), ParseError> {
        let text = collapse_whitespace(text);
        if text.is_empty() {
            return Ok(());
        }
        self.flush()?;
        self.headings.retain(|(l, _)| *l < level);
        self.headings.push((level, text));
        Ok(())
    }

    /// A paragraph of its own (closes the open block).
    pub(crate) fn paragraph(&mut self, text: &str) -> Result<(), ParseError> {
        self.end_block();
        let text = text.trim();
        if !text.is_empty() {
            self.account(text.len())?;
            self.paragraphs.push(text.to_string());
        }
        Ok(())
    }

    /// A paragraph whose indentation matters (`pre`): only blank lines around it and trailing
    /// space go.
    pub(crate) fn preformatted(&mut self, text: &str) -> Result<(), ParseError> {
        self.end_block();
        let text = text.trim_start_matches(['\n', '\r']).trim_end();
        if !text.trim().is_empty() {
            self.account(text.len())?;
            self.paragraphs.push(text.to_string());
        }
        Ok(())
    }

    /// A line of the open block (list item, table row).
    pub(crate) fn line(&mut self, text: &str) -> Result<(), ParseError> {
        let text = text.trim();
        if !text.is_empty() {
            self.account(text.len())?;
            self.block.push(text.to_string());
        }
        Ok(())
    }

    /// Closes the open block, making it one paragraph.
    pub(crate) fn end_block(&mut self) {
        if !self.block.is_empty() {
            let block = std::mem::take(&mut self.block).join("\n");
            self.paragraphs.push(block);
        }
    }

    fn account(&mut self, bytes: usize) -> Result<(), ParseError> {
        self.pending = self.pending.saturating_add(bytes + 2);
        if self.pending > self.out.max_bytes {
            return Err(text_limit(self.out.max_bytes));
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ParseError> {
        self.end_block();
        if self.paragraphs.is_empty() {
            return Ok(());
        }
        let text = std::mem::take(&mut self.paragraphs).join("\n\n");
        let path = self
            .headings
            .iter()
            .map(|(_, h)| h.as_str())
            .collect::<Vec<_>>()
            .join(" > ");
        self.out.push(path, text)
    }

    pub(crate) fn finish(mut self) -> Result<Vec<Section>, ParseError> {
        self.flush()?;
        Ok(self.out.into_vec())
    }
}

/// Collapses runs of whitespace (including newlines) to one space and trims.
pub(crate) fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outline_builds_paths_and_paragraphs() {
        let mut o = Outline::new(1000);
        o.paragraph("intro").unwrap();
        o.heading(1, "Setup").unwrap();
        o.paragraph("first").unwrap();
        o.line("a").unwrap();
        o.line("b").unwrap();
        o.heading(2, " Linux\n ").unwrap();
        o.paragraph("apt").unwrap();
        o.heading(2, "Mac").unwrap();
        o.heading(1, "Use").unwrap();
        o.paragraph("run").unwrap();
        let s = o.finish().unwrap();
        let got: Vec<(&str, &str)> = s
            .iter()
            .map(|s| (s.path.as_str(), s.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("", "intro"),
                ("Setup", "first\n\na\nb"),
                ("Setup > Linux", "apt"),
                ("Use", "run"),
            ]
        );
    }

    #[test]
    fn text_cap_is_a_limit() {
        let mut o = Outline::new(10);
        let err = o.paragraph("0123456789abcdef").unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
        let mut s = Sections::new(5);
        assert!(matches!(
            s.push(String::new(), "too long text".into()),
            Err(ParseError::Limit(_))
        ));
    }
}
