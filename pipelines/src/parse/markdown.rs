//! Markdown (CommonMark plus tables and strikethrough, via pulldown-cmark): the heading tree
//! names the sections (`Setup > Linux`); the text is plain, markup stripped. Link and image text
//! is kept and URLs dropped, emphasis and inline code lose their markers, list items become
//! lines (nested items too), code blocks are kept verbatim, table rows are cells joined by
//! ` | `, raw HTML is dropped. YAML (`---`) or TOML (`+++`) front matter is dropped.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::sink::Outline;
use super::{ParseError, ParseLimits};
use crate::model::Parsed;

pub(crate) fn parse(text: &str, limits: &ParseLimits) -> Result<Parsed, ParseError> {
    let body = strip_front_matter(text);
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let mut out = Outline::new(limits.max_text_bytes);
    // Text of the innermost open inline container (paragraph, heading, cell, tight item).
    let mut buf = String::new();
    // Open list items, each with the text gathered for it so far.
    let mut items: Vec<String> = Vec::new();
    let mut row: Vec<String> = Vec::new();
    let mut html_depth = 0usize;
    for event in Parser::new_ext(body, options) {
        match event {
            Event::Start(Tag::HtmlBlock) => html_depth += 1,
            Event::End(TagEnd::HtmlBlock) => html_depth = html_depth.saturating_sub(1),
            Event::Start(Tag::List(_)) => {
                // A nested list: the parent item's own text is a line before the children.
                if let Some(item) = items.last_mut() {
                    append(item, &buf);
                    buf.clear();
                    let line = std::mem::take(item);
                    out.line(&line)?;
                } else {
                    flush_paragraph(&mut out, &mut buf)?;
                }
            }
            Event::Start(Tag::Item) => items.push(String::new()),
            Event::End(TagEnd::Item) => {
                let mut item = items.pop().unwrap_or_default();
                append(&mut item, &buf);
                buf.clear();
                out.line(&item)?;
            }
            Event::End(TagEnd::List(_)) if items.is_empty() => out.end_block(),
            Event::Start(Tag::Heading { .. }) | Event::Start(Tag::CodeBlock(_)) => {
                flush_paragraph(&mut out, &mut buf)?;
            }
            Event::End(TagEnd::Heading(level)) => {
                out.heading(level as u8, &buf)?;
                buf.clear();
            }
            Event::End(TagEnd::Paragraph) | Event::End(TagEnd::CodeBlock) => {
                match items.last_mut() {
                    Some(item) => append(item, &buf),
                    None => out.paragraph(&buf)?,
                }
                buf.clear();
            }
            Event::End(TagEnd::TableCell) => {
                row.push(super::sink::collapse_whitespace(&buf));
                buf.clear();
            }
            Event::End(TagEnd::TableHead) | Event::End(TagEnd::TableRow) => {
                let cells: Vec<&str> = row
                    .iter()
                    .map(String::as_str)
                    .filter(|c| !c.is_empty())
                    .collect();
                out.line(&cells.join(" | "))?;
                row.clear();
            }
            Event::End(TagEnd::Table) => out.end_block(),
            Event::Text(t) | Event::Code(t) if html_depth == 0 => buf.push_str(&t),
            Event::SoftBreak => buf.push(' '),
            Event::HardBreak => buf.push('\n'),
            _ => {}
        }
        if buf.len() > limits.max_text_bytes {
            return Err(super::sink::text_limit(limits.max_text_bytes));
        }
    }
    flush_paragraph(&mut out, &mut buf)?;
    Ok(Parsed {
        sections: out.finish()?,
        images: Vec::new(),
        pages: 1,
    })
}

fn append(target: &mut String, text: &str) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    if !target.is_empty() {
        target.push(' ');
    }
    target.push_str(text);
}

fn flush_paragraph(out: &mut Outline, buf: &mut String) -> Result<(), ParseError> {
    if !buf.trim().is_empty() {
        out.paragraph(buf)?;
    }
    buf.clear();
    Ok(())
}

/// Drops a leading `---` ... `---` (or `...`) YAML block, or `+++` ... `+++` TOML block.
fn strip_front_matter(text: &str) -> &str {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    for fence in ["---", "+++"] {
        let Some(rest) = text.strip_prefix(fence) else {
            continue;
        };
        let Some(rest) = rest.strip_prefix('\n') else {
            continue;
        };
        let mut offset = 0;
        for line in rest.split_inclusive('\n') {
            let trimmed = line.trim_end();
            offset += line.len();
            if trimmed == fence || (fence == "---" && trimmed == "...") {
                return &rest[offset..];
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sections(md: &str) -> Vec<(String, String)> {
        crate::parse::parse(
            crate::model::SourceKind::Markdown,
            md.as_bytes(),
            &ParseLimits::default(),
        )
        .unwrap()
        .sections
        .into_iter()
        .map(|s| (s.path, s.text))
        .collect()
    }

    #[test]
    fn headings_and_plain_text() {
        let md = "---\ntitle: x\ntags: [a]\n---\nIntro with a [link](https://example.com) and *emphasis*.\n\n\
                  # Setup\n\nInstall `tool`\nnow.\n\n- one\n- two\n  - nested **bold**\n- three\n\n\
                  ## Linux\n\n```sh\napt install x\napt update\n```\n\n<div>raw html</div>\n\n\
                  # Tables\n\n| a | b |\n|---|---|\n| 1 | 2 |\n";
        assert_eq!(
            sections(md),
            vec![
                ("".into(), "Intro with a link and emphasis.".into()),
                (
                    "Setup".into(),
                    "Install tool now.\n\none\ntwo\nnested bold\nthree".into()
                ),
                ("Setup > Linux".into(), "apt install x\napt update".into()),
                ("Tables".into(), "a | b\n1 | 2".into()),
            ]
        );
    }

    #[test]
    fn loose_list_items_are_lines() {
        let md = "# H\n\n1. first para\n\n   more\n2. second\n";
        assert_eq!(
            sections(md),
            vec![("H".into(), "first para more\nsecond".into())]
        );
    }

    #[test]
    fn front_matter_only_is_empty() {
        let err = crate::parse::parse(
            crate::model::SourceKind::Markdown,
            b"---\na: b\n---\n",
            &ParseLimits::default(),
        )
        .unwrap_err();
        assert!(matches!(err, ParseError::Empty), "{err}");
    }
}
