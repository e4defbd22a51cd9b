//! HTML (html5ever via scraper): the readable content of a page.
//!
//! - Dropped: `head`, `script`, `style`, `noscript`, `template`, `svg`, `nav`, `header`
//!   (kept when inside the chosen `<article>`/`<main>`), `footer`, `aside`, `form`, `iframe`,
//!   and any element with `role` navigation/banner/contentinfo/search, `hidden`,
//!   `aria-hidden="true"` or an inline `display:none`.
//! - The content root is the biggest `<main>` or `<article>` (by text length) when there is
//!   one, else `<body>`.
//! - `h1`-`h6` build the heading path of the sections. Block elements (`p`, `div`, `pre`,
//!   `blockquote`, `dd`/`dt`, ...) become paragraphs, `li` items lines, table rows lines of
//!   cells joined by ` | `. Whitespace is collapsed except in `pre`; entities are decoded by
//!   the parser. The `<title>` is not a section.
//!
//! The tree is walked with an explicit stack, so deeply nested markup cannot overflow it.

use ego_tree::NodeRef;
use scraper::{ElementRef, Html, Node};

use super::sink::{collapse_whitespace, Outline};
use super::{ParseError, ParseLimits};
use crate::model::Parsed;

/// Deepest element nesting parsed. The HTML parser's work grows with the square of the depth
/// (100,000 nested `div`s take minutes), and no real page nests this deep.
const MAX_NESTING: usize = 2_000;

pub(crate) fn parse(text: &str, limits: &ParseLimits) -> Result<Parsed, ParseError> {
    if nesting_depth(text) > MAX_NESTING {
        return Err(ParseError::Limit(format!(
            "the html nests elements more than {MAX_NESTING} deep"
        )));
    }
    let document = Html::parse_document(text);
    let root = content_root(&document);
    let mut walker = Walker::new(limits.max_text_bytes, root.value().name() != "body");
    walker.walk(*root)?;
    Ok(Parsed {
        sections: walker.finish()?,
        images: Vec::new(),
        pages: 1,
    })
}

/// The deepest nesting of tags, by a quick scan: an opening tag (not void, not `/>`) goes one
/// deeper, a closing tag one back. Comments, scripts and attributes may fool it by a little;
/// it only has to tell pages from bombs. Void elements and those whose end tag may be left out
/// (`p`, `li`, `td`, ...) are not counted, so ordinary pages never look deep.
fn nesting_depth(text: &str) -> usize {
    const VOID: &[&str] = &[
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr", "!doctype", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup",
        "thead", "tbody", "tfoot", "colgroup", "rb", "rt", "rp", "html", "head", "body",
    ];
    let bytes = text.as_bytes();
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut at = 0;
    while let Some(offset) = bytes[at..].iter().position(|&b| b == b'<') {
        let start = at + offset + 1;
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'>')
            .map_or(bytes.len(), |e| start + e);
        let tag = &text[start.min(text.len())..end.min(text.len())];
        if let Some(rest) = tag.strip_prefix('/') {
            let name = rest
                .split(|c: char| c.is_whitespace())
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            if !name.is_empty() && !VOID.contains(&name.as_str()) {
                depth = depth.saturating_sub(1);
            }
        } else if tag.starts_with(|c: char| c.is_ascii_alphabetic()) && !tag.ends_with('/') {
            let name = tag
                .split(|c: char| c.is_whitespace())
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            if !VOID.contains(&name.as_str()) {
                depth += 1;
                deepest = deepest.max(depth);
            }
        }
        at = end.min(bytes.len().saturating_sub(1)).max(start);
        if end >= bytes.len() {
            break;
        }
    }
    deepest
}

/// Whether the bytes start (after a BOM and whitespace) with `<!doctype html` or `<html`.
pub(crate) fn looks_like_html(bytes: &[u8]) -> bool {
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let start = body
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(body.len());
    let head: Vec<u8> = body[start..]
        .iter()
        .take(14)
        .map(u8::to_ascii_lowercase)
        .collect();
    head.starts_with(b"<!doctype html") || head.starts_with(b"<html")
}

fn is_dropped(element: &scraper::node::Element, keep_header: bool) -> bool {
    let name = element.name();
    let dropped_tag = matches!(
        name,
        "head"
            | "title"
            | "script"
            | "style"
            | "noscript"
            | "template"
            | "svg"
            | "nav"
            | "footer"
            | "aside"
            | "form"
            | "iframe"
            | "object"
            | "button"
            | "select"
            | "dialog"
    ) || (name == "header" && !keep_header);
    if dropped_tag || element.attr("hidden").is_some() {
        return true;
    }
    if let Some(role) = element.attr("role") {
        let role = role.to_ascii_lowercase();
        if matches!(
            role.trim(),
            "navigation" | "banner" | "contentinfo" | "search"
        ) {
            return true;
        }
    }
    if element
        .attr("aria-hidden")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return true;
    }
    element.attr("style").is_some_and(|style| {
        let compact: String = style
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_lowercase();
        compact.contains("display:none") || compact.contains("visibility:hidden")
    })
}

/// The biggest `<main>` or `<article>` outside dropped elements, else `<body>`, else the root.
fn content_root(document: &Html) -> ElementRef<'_> {
    let mut best: Option<(usize, ElementRef<'_>)> = None;
    for node in document.tree.root().descendants() {
        let Some(element) = ElementRef::wrap(node) else {
            continue;
        };
        let name = element.value().name();
        if name != "main" && name != "article" {
            continue;
        }
        let hidden = node
            .ancestors()
            .any(|a| a.value().as_element().is_some_and(|e| is_dropped(e, false)));
        if hidden || is_dropped(element.value(), false) {
            continue;
        }
        let size: usize = element.text().map(|t| t.trim().len()).sum();
        if best.as_ref().is_none_or(|(s, _)| size > *s) {
            best = Some((size, element));
        }
    }
    if let Some((size, element)) = best {
        if size > 0 {
            return element;
        }
    }
    document
        .tree
        .root()
        .descendants()
        .filter_map(ElementRef::wrap)
        .find(|e| e.value().name() == "body")
        .unwrap_or_else(|| document.root_element())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    /// A paragraph-like block: its text is a paragraph.
    Paragraph,
    /// A list item: its text is a line.
    Item,
    Heading(u8),
    Pre,
    Row,
    Cell,
    Table,
    List,
    /// A line break inside the current text.
    Break,
    Inline,
}

fn classify(name: &str) -> Block {
    match name {
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
            Block::Heading(name.as_bytes()[1].saturating_sub(b'0'))
        }
        "li" | "dt" | "dd" => Block::Item,
        "ul" | "ol" | "dl" | "menu" => Block::List,
        "pre" => Block::Pre,
        "table" => Block::Table,
        "tr" => Block::Row,
        "td" | "th" => Block::Cell,
        "br" | "hr" => Block::Break,
        "p" | "div" | "section" | "blockquote" | "figure" | "figcaption" | "address"
        | "caption" | "details" | "summary" | "center" | "main" | "article" | "header" | "body"
        | "html" | "fieldset" | "legend" | "thead" | "tbody" | "tfoot" => Block::Paragraph,
        _ => Block::Inline,
    }
}

struct Walker {
    out: Outline,
    /// Text since the last block boundary (may hold `\n` from `<br>` and in `pre`).
    text: String,
    max_bytes: usize,
    keep_header: bool,
    items: usize,
    pre: usize,
    tables: usize,
    cells: usize,
    row: Vec<String>,
}

impl Walker {
    fn new(max_bytes: usize, keep_header: bool) -> Walker {
        Walker {
            out: Outline::new(max_bytes),
            text: String::new(),
            max_bytes,
            keep_header,
            items: 0,
            pre: 0,
            tables: 0,
            cells: 0,
            row: Vec::new(),
        }
    }

    fn walk(&mut self, root: NodeRef<'_, Node>) -> Result<(), ParseError> {
        // (node, entering): children are pushed in reverse so they pop in order.
        let mut stack = vec![(root, true)];
        while let Some((node, entering)) = stack.pop() {
            match node.value() {
                Node::Text(t) if entering => {
                    if self.pre > 0 {
                        self.text.push_str(t);
                    } else {
                        // Source line breaks are spaces; `\n` in `text` marks a `<br>`.
                        self.text
                            .extend(t.chars().map(|c| if c == '\n' { ' ' } else { c }));
                    }
                    if self.text.len() > self.max_bytes {
                        return Err(super::sink::text_limit(self.max_bytes));
                    }
                }
                Node::Element(element) => {
                    let name = element.name();
                    if entering {
                        if is_dropped(element, self.keep_header) {
                            continue;
                        }
                        self.enter(classify(name))?;
                        stack.push((node, false));
                        let children: Vec<_> = node.children().collect();
                        stack.extend(children.into_iter().rev().map(|c| (c, true)));
                    } else {
                        self.exit(classify(name))?;
                    }
                }
                Node::Document | Node::Fragment if entering => {
                    let children: Vec<_> = node.children().collect();
                    stack.extend(children.into_iter().rev().map(|c| (c, true)));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Emits the pending text: as a line inside lists and tables, else as a paragraph.
    fn flush(&mut self) -> Result<(), ParseError> {
        let text = std::mem::take(&mut self.text);
        if self.cells > 0 {
            // Inside a cell, blocks only separate words.
            self.text = text;
            self.text.push(' ');
            return Ok(());
        }
        let text = self.clean(&text);
        if text.is_empty() {
            return Ok(());
        }
        if self.pre > 0 {
            self.out.preformatted(&text)
        } else if self.items > 0 {
            for line in text.lines() {
                self.out.line(line)?;
            }
            Ok(())
        } else {
            self.out.paragraph(&text)
        }
    }

    /// Collapses whitespace (per `<br>` line, and not at all inside `pre`).
    fn clean(&self, text: &str) -> String {
        if self.pre > 0 {
            return text.trim_matches('\n').trim_end().to_string();
        }
        text.split('\n')
            .map(collapse_whitespace)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn enter(&mut self, block: Block) -> Result<(), ParseError> {
        match block {
            Block::Inline => {}
            Block::Break => {
                if self.pre == 0 {
                    self.text.push('\n');
                }
            }
            Block::Cell if self.tables == 1 => {
                self.cells += 1;
                self.text.clear();
            }
            Block::Row if self.tables == 1 && self.cells == 0 => self.row.clear(),
            Block::Table => {
                if self.tables == 0 && self.cells == 0 {
                    self.flush()?;
                    self.out.end_block();
                }
                self.tables += 1;
            }
            Block::Item => {
                self.flush()?;
                self.items += 1;
            }
            Block::List => {
                self.flush()?;
            }
            Block::Pre => {
                self.flush()?;
                self.pre += 1;
            }
            Block::Heading(_) | Block::Paragraph | Block::Cell | Block::Row => self.flush()?,
        }
        Ok(())
    }

    fn exit(&mut self, block: Block) -> Result<(), ParseError> {
        match block {
            Block::Inline | Block::Break => {}
            Block::Heading(level) => {
                if self.cells > 0 {
                    self.text.push(' ');
                } else {
                    let text = collapse_whitespace(&std::mem::take(&mut self.text));
                    self.out.heading(level, &text)?;
                }
            }
            Block::Cell if self.tables == 1 && self.cells > 0 => {
                self.cells -= 1;
                let cell = collapse_whitespace(&std::mem::take(&mut self.text));
                self.row.push(cell);
            }
            Block::Row if self.tables == 1 && self.cells == 0 => {
                let cells: Vec<&str> = self
                    .row
                    .iter()
                    .map(String::as_str)
                    .filter(|c| !c.is_empty())
                    .collect();
                let line = cells.join(" | ");
                self.row.clear();
                self.text.clear();
                self.out.line(&line)?;
            }
            Block::Table => {
                self.tables = self.tables.saturating_sub(1);
                if self.tables == 0 && self.cells == 0 {
                    self.flush()?;
                    self.out.end_block();
                } else {
                    self.text.push(' ');
                }
            }
            Block::Item => {
                self.flush()?;
                self.items = self.items.saturating_sub(1);
            }
            // A list is one block of lines, however many items it has.
            Block::List => {
                self.flush()?;
                if self.items == 0 {
                    self.out.end_block();
                }
            }
            Block::Pre => {
                self.flush()?;
                self.pre = self.pre.saturating_sub(1);
            }
            Block::Paragraph | Block::Cell | Block::Row => self.flush()?,
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<crate::model::Section>, ParseError> {
        self.cells = 0;
        self.flush()?;
        self.out.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SourceKind;

    fn sections(html: &str) -> Vec<(String, String)> {
        crate::parse::parse(SourceKind::Html, html.as_bytes(), &ParseLimits::default())
            .unwrap()
            .sections
            .into_iter()
            .map(|s| (s.path, s.text))
            .collect()
    }

    #[test]
    fn article_text_without_boilerplate() {
        let html = r#"<!DOCTYPE html><html><head><title>Page title</title>
            <style>p { color: red }</style><script>var x = "<p>no</p>";</script></head>
            <body><header><a href="/">Home</a></header>
            <nav><ul><li>Menu one</li><li>Menu two</li></ul></nav>
            <div role="navigation">Skip to content</div>
            <main>
              <h1>Guide</h1>
              <p>Fish &amp; chips,   served
                 hot.<br>Second line.</p>
              <div hidden>secret</div>
              <h2>Steps</h2>
              <ul><li>First <b>step</b></li><li>Second<ul><li>Nested</li></ul></li></ul>
              <table><tr><th>Name</th><th>Age</th></tr><tr><td><p>Ada</p></td><td>36</td></tr></table>
              <pre>  code
    indented</pre>
            </main>
            <aside>Related links</aside><footer>Copyright</footer></body></html>"#;
        assert_eq!(
            sections(html),
            vec![
                (
                    "Guide".into(),
                    "Fish & chips, served hot.\nSecond line.".into()
                ),
                (
                    "Guide > Steps".into(),
                    "First step\nSecond\nNested\n\nName | Age\nAda | 36\n\n  code\n    indented"
                        .into()
                ),
            ]
        );
    }

    #[test]
    fn biggest_article_wins_and_body_is_the_fallback() {
        let html = "<html><body><p>Outside</p><article><p>Short</p></article>\
                    <article><h3>Long</h3><p>A much longer article body.</p></article></body></html>";
        assert_eq!(
            sections(html),
            vec![("Long".into(), "A much longer article body.".into())]
        );
        let html = "<p>No structure at all</p><footer>f</footer>";
        assert_eq!(
            sections(html),
            vec![("".into(), "No structure at all".into())]
        );
    }

    #[test]
    fn deep_nesting_is_a_limit_and_ordinary_depth_reads() {
        let bomb = "<div>".repeat(100_000) + "deep text" + &"</div>".repeat(100_000);
        let err = crate::parse::parse(SourceKind::Html, bomb.as_bytes(), &ParseLimits::default())
            .unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
        let deep = "<div>".repeat(500) + "deep text<br><img src=x>" + &"</div>".repeat(500);
        assert_eq!(nesting_depth(&deep), 500);
        assert_eq!(sections(&deep), vec![("".into(), "deep text".into())]);
    }

    #[test]
    fn html_sniffing() {
        assert!(looks_like_html(b"  \n<!DocType html>"));
        assert!(looks_like_html(b"\xEF\xBB\xBF<HTML>"));
        assert!(!looks_like_html(b"<p>fragment</p>"));
        assert!(!looks_like_html(b"<htm"));
    }
}
