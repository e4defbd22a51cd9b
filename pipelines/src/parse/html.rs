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
//!
//! Limits: html5ever's tree builder does work for each token in proportion to the depth of
//! the elements open at that point, so a file of 200,000 nested elements holds it for
//! minutes; its tokenizer checks each attribute against the tag's earlier ones, so one tag
//! with 200,000 attributes does too; and formatting elements left open are re-created in
//! every later block, so a small file can make millions of elements. Before the parser sees
//! anything, a quick scan refuses tags whose attributes need more than
//! [`MAX_ATTRIBUTE_PAIRS`] comparisons; then the parser is fed a few kilobytes at a time and
//! stopped as soon as its tree is deeper than [`MAX_NESTING`] or holds more than
//! [`MAX_ELEMENTS`] nodes (elements, comments), whatever markup got it there: depth is
//! measured on the tree the parser builds (`<div/>` opens a `div`, `</td>` closes an unclosed
//! `<font>`), never guessed from the markup. Every refusal is a [`ParseError::Limit`] naming
//! its limit.

use std::cell::{Cell, Ref, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use ego_tree::iter::Edge;
use ego_tree::{NodeId, NodeRef};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};
use scraper::{ElementRef, Html, HtmlTreeSink, Node};

use super::sink::{collapse_whitespace, Outline};
use super::{ParseError, ParseLimits};
use crate::model::Parsed;

/// Deepest element nesting parsed. The HTML parser's work grows with the square of the depth
/// (100,000 nested `div`s take minutes), and no real page nests this deep.
pub(crate) const MAX_NESTING: usize = 2_000;
/// Pairs of attributes within a tag, all tags together: the tokenizer compares each attribute
/// with the tag's earlier ones, so a tag of n attributes costs n(n-1)/2 comparisons (200,000
/// attributes in one tag hold it for 11 s). This allows one tag of about 31,600 attributes,
/// or many smaller ones, in about a quarter of a second; real pages and scripts (counted as
/// if their text were tags, see [`attribute_pairs`]) stay under 6,000,000.
pub(crate) const MAX_ATTRIBUTE_PAIRS: u64 = 500_000_000;
/// Elements of one document (about 175 bytes of memory each once parsed). Real pages have
/// tens of thousands.
pub(crate) const MAX_ELEMENTS: usize = 1_000_000;
/// Bytes handed to the parser at a time, between checks of its tree.
const CHUNK: usize = 4096;

pub(crate) fn parse(text: &str, limits: &ParseLimits) -> Result<Parsed, ParseError> {
    // Nesting is measured on the tree the parser builds, not by a scan of the markup: a scan
    // cannot know that `</td>` closes an unclosed `<font>`, and refused real pages.
    let (pairs, most) = attribute_pairs(text.as_bytes());
    if pairs > MAX_ATTRIBUTE_PAIRS {
        return Err(ParseError::Limit(format!(
            "the html's tags have too many attributes (one has {most}): comparing them takes \
             more than the limit of {MAX_ATTRIBUTE_PAIRS} attribute pairs"
        )));
    }
    let document = parse_guarded(text)?;
    let root = content_root(&document);
    let mut walker = Walker::new(limits.max_text_bytes, root.value().name() != "body");
    walker.walk(*root)?;
    Ok(Parsed {
        sections: walker.finish()?,
        images: Vec::new(),
        pages: 1,
    })
}

fn too_deep() -> ParseError {
    ParseError::Limit(format!(
        "the html nests elements deeper than the limit of {MAX_NESTING}"
    ))
}

/// Which limit stopped the parser.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Over {
    Depth,
    Elements,
}

/// scraper's tree sink, counting the elements it creates and the depth at which each node is
/// placed, and raising a flag when either is over its limit.
struct Guarded {
    inner: HtmlTreeSink,
    depth: RefCell<HashMap<NodeId, u32>>,
    elements: Cell<usize>,
    over: Rc<Cell<Option<Over>>>,
}

impl Guarded {
    fn depth_of(&self, node: &NodeId) -> u32 {
        self.depth.borrow().get(node).copied().unwrap_or(0)
    }

    /// Counts one more node of the tree against [`MAX_ELEMENTS`].
    fn count_node(&self) {
        let count = self.elements.get() + 1;
        self.elements.set(count);
        if count > MAX_ELEMENTS && self.over.get().is_none() {
            self.over.set(Some(Over::Elements));
        }
    }

    fn place(&self, node: NodeId, depth: u32) {
        if depth as usize > MAX_NESTING && self.over.get().is_none() {
            self.over.set(Some(Over::Depth));
        }
        self.depth.borrow_mut().insert(node, depth);
    }
}

impl TreeSink for Guarded {
    type Output = Html;
    type Handle = NodeId;
    type ElemName<'a> = Ref<'a, QualName>;

    fn finish(self) -> Html {
        self.inner.finish()
    }

    fn parse_error(&self, msg: std::borrow::Cow<'static, str>) {
        self.inner.parse_error(msg)
    }

    fn get_document(&self) -> NodeId {
        self.inner.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a NodeId) -> Ref<'a, QualName> {
        self.inner.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        self.count_node();
        self.inner.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> NodeId {
        // Comments (and bogus comments such as `<?>`) are nodes too: counted like elements.
        self.count_node();
        self.inner.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> NodeId {
        self.count_node();
        self.inner.create_pi(target, data)
    }

    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        if let NodeOrText::AppendNode(id) = &child {
            self.place(*id, self.depth_of(parent) + 1);
        }
        self.inner.append(parent, child)
    }

    fn append_based_on_parent_node(
        &self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        let has_parent = self
            .inner
            .0
            .borrow()
            .tree
            .get(*element)
            .is_some_and(|node| node.parent().is_some());
        if has_parent {
            self.append_before_sibling(element, child)
        } else {
            self.append(prev_element, child)
        }
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.inner
            .append_doctype_to_document(name, public_id, system_id)
    }

    fn mark_script_already_started(&self, node: &NodeId) {
        self.inner.mark_script_already_started(node)
    }

    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        // A template's contents hang off a fragment outside the tree: they are as deep as the
        // template, or templates nested inside templates would each start again from the top.
        let contents = self.inner.get_template_contents(target);
        if !self.depth.borrow().contains_key(&contents) {
            self.place(contents, self.depth_of(target) + 1);
        }
        contents
    }

    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.inner.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode)
    }

    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        if let NodeOrText::AppendNode(id) = &new_node {
            self.place(*id, self.depth_of(sibling));
        }
        self.inner.append_before_sibling(sibling, new_node)
    }

    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        self.inner.add_attrs_if_missing(target, attrs)
    }

    fn remove_from_parent(&self, target: &NodeId) {
        self.inner.remove_from_parent(target)
    }

    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        let children: Vec<NodeId> = self
            .inner
            .0
            .borrow()
            .tree
            .get(*node)
            .map(|n| n.children().map(|c| c.id()).collect())
            .unwrap_or_default();
        let depth = self.depth_of(new_parent) + 1;
        for child in children {
            self.place(child, depth);
        }
        self.inner.reparent_children(node, new_parent)
    }
}

/// Parses `text` a chunk at a time, stopping as soon as the tree is over a limit.
fn parse_guarded(text: &str) -> Result<Html, ParseError> {
    let over = Rc::new(Cell::new(None));
    let sink = Guarded {
        inner: HtmlTreeSink::new(Html::new_document()),
        depth: RefCell::new(HashMap::new()),
        elements: Cell::new(0),
        over: over.clone(),
    };
    let mut parser = html5ever::parse_document(sink, Default::default());
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + CHUNK).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        parser.process(StrTendril::from_slice(&text[start..end]));
        match over.get() {
            Some(Over::Depth) => return Err(too_deep()),
            Some(Over::Elements) => {
                return Err(ParseError::Limit(format!(
                    "the html makes more elements than the limit of {MAX_ELEMENTS}"
                )))
            }
            None => {}
        }
        start = end;
    }
    let document = parser.finish();
    match over.get() {
        Some(Over::Depth) => Err(too_deep()),
        Some(Over::Elements) => Err(ParseError::Limit(format!(
            "the html makes more elements than the limit of {MAX_ELEMENTS}"
        ))),
        None => Ok(document),
    }
}

/// HTML's ASCII whitespace.
fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0C' | b'\r' | b' ')
}

/// The pairs of attributes the tokenizer will compare, over all tags, and the most attributes
/// of one tag, found without knowing where tags really are: every `<` followed by a letter (or
/// `</` and a letter) starts a possible tag, which is followed through the tokenizer's
/// attribute states (quoted values may hold `>`) to its `>`. Possible tags in the same state
/// at the same byte go on identically, so only the largest count per state is kept: linear
/// time, and no comment, script or CDATA section can hide a tag from it. Text that only looks
/// like tags (`i<n` in a script) is counted too, which is why the limit is on pairs over the
/// whole file, far above what real pages and scripts reach, rather than a small count per tag.
fn attribute_pairs(bytes: &[u8]) -> (u64, usize) {
    const TAG_NAME: usize = 0;
    const BEFORE_NAME: usize = 1;
    const NAME: usize = 2;
    const AFTER_NAME: usize = 3;
    const BEFORE_VALUE: usize = 4;
    const DOUBLE: usize = 5;
    const SINGLE: usize = 6;
    const UNQUOTED: usize = 7;
    const AFTER_QUOTED: usize = 8;
    const SELF_CLOSING: usize = 9;
    const END_OPEN: usize = 10;
    const STATES: usize = 11;
    type Runs = [Option<usize>; STATES];

    fn pairs(count: usize) -> u64 {
        let n = count as u64;
        n * n.saturating_sub(1) / 2
    }

    /// Where each run goes; `done` adds up the pairs of the tags that end.
    struct Next {
        runs: Runs,
        done: u64,
        most: usize,
    }

    impl Next {
        fn go(&mut self, state: usize, count: usize) {
            self.most = self.most.max(count);
            let slot = &mut self.runs[state];
            *slot = Some(slot.map_or(count, |c| c.max(count)));
        }

        fn end(&mut self, count: usize) {
            self.done = self.done.saturating_add(pairs(count));
        }
    }

    fn step(state: usize, count: usize, b: u8, next: &mut Next) {
        let space = is_space(b);
        match state {
            TAG_NAME => match b {
                _ if space => next.go(BEFORE_NAME, count),
                b'/' => next.go(SELF_CLOSING, count),
                b'>' => next.end(count),
                _ => next.go(TAG_NAME, count),
            },
            BEFORE_NAME => match b {
                _ if space => next.go(BEFORE_NAME, count),
                b'/' | b'>' => step(AFTER_NAME, count, b, next),
                _ => next.go(NAME, count + 1),
            },
            NAME => match b {
                _ if space => step(AFTER_NAME, count, b, next),
                b'/' | b'>' => step(AFTER_NAME, count, b, next),
                b'=' => next.go(BEFORE_VALUE, count),
                _ => next.go(NAME, count),
            },
            AFTER_NAME => match b {
                _ if space => next.go(AFTER_NAME, count),
                b'/' => next.go(SELF_CLOSING, count),
                b'=' => next.go(BEFORE_VALUE, count),
                b'>' => next.end(count),
                _ => next.go(NAME, count + 1),
            },
            BEFORE_VALUE => match b {
                _ if space => next.go(BEFORE_VALUE, count),
                b'"' => next.go(DOUBLE, count),
                b'\'' => next.go(SINGLE, count),
                b'>' => next.end(count),
                _ => step(UNQUOTED, count, b, next),
            },
            DOUBLE if b == b'"' => next.go(AFTER_QUOTED, count),
            DOUBLE => next.go(DOUBLE, count),
            SINGLE if b == b'\'' => next.go(AFTER_QUOTED, count),
            SINGLE => next.go(SINGLE, count),
            UNQUOTED => match b {
                _ if space => next.go(BEFORE_NAME, count),
                b'>' => next.end(count),
                _ => next.go(UNQUOTED, count),
            },
            AFTER_QUOTED => match b {
                _ if space => next.go(BEFORE_NAME, count),
                b'/' => next.go(SELF_CLOSING, count),
                b'>' => next.end(count),
                _ => step(BEFORE_NAME, count, b, next),
            },
            SELF_CLOSING => match b {
                b'>' => next.end(count),
                _ => step(BEFORE_NAME, count, b, next),
            },
            // END_OPEN: the `/` of `</`.
            _ => next.go(TAG_NAME, count),
        }
    }

    let mut runs: Runs = [None; STATES];
    let mut active = false;
    let (mut done, mut most) = (0u64, 0usize);
    let mut at = 0;
    while at < bytes.len() {
        if !active {
            // Nothing open: jump to the next `<`.
            match bytes[at..].iter().position(|&b| b == b'<') {
                Some(offset) => at += offset,
                None => break,
            }
        }
        let b = bytes[at];
        if active {
            let mut next = Next {
                runs: [None; STATES],
                done,
                most,
            };
            for (state, count) in runs.iter().enumerate() {
                if let Some(count) = count {
                    step(state, *count, b, &mut next);
                }
            }
            (runs, done, most) = (next.runs, next.done, next.most);
            if done > MAX_ATTRIBUTE_PAIRS {
                break;
            }
        }
        if b == b'<' {
            match bytes.get(at + 1) {
                Some(c) if c.is_ascii_alphabetic() => {
                    runs[TAG_NAME] = Some(runs[TAG_NAME].unwrap_or(0));
                }
                Some(b'/') if bytes.get(at + 2).is_some_and(u8::is_ascii_alphabetic) => {
                    runs[END_OPEN] = Some(runs[END_OPEN].unwrap_or(0));
                }
                _ => {}
            }
        }
        active = runs.iter().any(Option::is_some);
        at += 1;
    }
    // Tags still open at the end: the tokenizer compared their attributes all the same.
    for count in runs.iter().flatten() {
        done = done.saturating_add(pairs(*count));
    }
    (done, most)
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

/// The biggest `<main>` or `<article>` (by the trimmed length of all the text inside it)
/// outside dropped elements, the first of equals, else `<body>`, else the root. One walk over
/// the tree: each candidate's text is summed as the walk leaves it and added to the candidate
/// around it, so a thousand nested articles cost no more than one.
fn content_root(document: &Html) -> ElementRef<'_> {
    // Open candidates: (their node, text so far); and whether each open element is dropped.
    let mut open: Vec<(NodeRef<'_, Node>, usize)> = Vec::new();
    let mut dropped: Vec<bool> = Vec::new();
    let mut hidden = 0usize;
    let mut best: Option<(usize, NodeId, ElementRef<'_>)> = None;
    let mut order: HashMap<NodeId, usize> = HashMap::new();
    for edge in document.tree.root().traverse() {
        match edge {
            Edge::Open(node) => match node.value() {
                Node::Element(element) => {
                    let drop = is_dropped(element, false);
                    let name = element.name();
                    if hidden == 0 && !drop && (name == "main" || name == "article") {
                        order.insert(node.id(), order.len());
                        open.push((node, 0));
                    }
                    dropped.push(drop);
                    hidden += usize::from(drop);
                }
                Node::Text(text) => {
                    if let Some((_, size)) = open.last_mut() {
                        *size += text.trim().len();
                    }
                }
                _ => {}
            },
            Edge::Close(node) => {
                if !node.value().is_element() {
                    continue;
                }
                if dropped.pop() == Some(true) {
                    hidden -= 1;
                }
                if open.last().is_some_and(|(n, _)| n.id() == node.id()) {
                    let (_, size) = open.pop().unwrap_or((node, 0));
                    if let Some((_, outer)) = open.last_mut() {
                        *outer += size;
                    }
                    let first = order[&node.id()];
                    let better = match &best {
                        None => true,
                        Some((s, id, _)) => size > *s || (size == *s && first < order[id]),
                    };
                    if better {
                        if let Some(element) = ElementRef::wrap(node) {
                            best = Some((size, node.id(), element));
                        }
                    }
                }
            }
        }
    }
    if let Some((size, _, element)) = best {
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
        assert_eq!(sections(&deep), vec![("".into(), "deep text".into())]);
        // Tables of old editors leave a `<font>` open in every cell; `</td>` closes it, so
        // thousands of rows stay a few levels deep.
        let sloppy = format!(
            "<table>{}</table>",
            "<tr><td><font size=2>x</td></tr>".repeat(3000)
        );
        assert_eq!(sections(&sloppy).len(), 1);
    }

    fn refused(html: &str) -> String {
        let err = crate::parse::parse(SourceKind::Html, html.as_bytes(), &ParseLimits::default())
            .unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
        err.to_string()
    }

    #[test]
    fn self_closed_divs_nest_and_are_refused() {
        let bomb = String::from_utf8(crate::fixtures::nested_html(200_000)).unwrap();
        assert_eq!(bomb.len(), 1_200_000);
        assert_eq!(
            refused(&bomb),
            "the html nests elements deeper than the limit of 2000"
        );
        // Inside svg and math the slash closes the element; void elements never open.
        let svg = format!("<svg>{}</svg><p>x", "<path d=\"M0 0\"/>".repeat(5000));
        assert_eq!(sections(&svg), vec![("".into(), "x".into())]);
        let voids = format!("{}<p>y", "<br/><img src=x/>".repeat(5000));
        assert_eq!(sections(&voids), vec![("".into(), "y".into())]);
    }

    #[test]
    fn comments_count_as_nodes() {
        assert_eq!(
            refused(&"<?>".repeat(1_100_000)),
            "the html makes more elements than the limit of 1000000"
        );
    }

    #[test]
    fn nesting_built_by_the_parser_is_stopped_by_its_guard() {
        // Each of these nests an element per repetition inside html5ever, from markup that
        // does not look nested.
        for bomb in [
            "<li><dd>".repeat(5000),
            "<rt>".repeat(5000),
            "<optgroup>".repeat(5000),
            "<div></b>".repeat(5000),
            format!("<svg><foreignObject>{}", "<div/>".repeat(5000)),
            format!("<template>{}", "<li><dd>".repeat(900)).repeat(6),
        ] {
            assert_eq!(
                refused(&bomb),
                "the html nests elements deeper than the limit of 2000"
            );
        }
    }

    #[test]
    fn formatting_elements_re_created_in_every_block_are_stopped() {
        // 1,500 open formatting elements are re-created inside each of 1,000 paragraphs: 1.5
        // million elements from 30 KB.
        let mut bomb = String::from("<div>");
        for i in 0..1500 {
            bomb.push_str(&format!("<b id={i}>"));
        }
        bomb.push_str("</div>");
        bomb.push_str(&"<p>x</p>".repeat(1000));
        assert_eq!(
            refused(&bomb),
            "the html makes more elements than the limit of 1000000"
        );
    }

    #[test]
    fn tags_with_too_many_attributes_are_refused_before_parsing() {
        let attributes = |n: usize| (0..n).map(|i| format!(" a{i}")).collect::<String>();
        let giant = attributes(40_000);
        let bomb = format!("<div{giant}>text</div>");
        assert_eq!(
            refused(&bomb),
            "the html's tags have too many attributes (one has 40000): comparing them takes \
             more than the limit of 500000000 attribute pairs"
        );
        // Many tags of 5,000 attributes add up.
        let many = format!("<div{}>text</div>", attributes(5000)).repeat(100);
        assert!(refused(&many).contains("attribute pairs"));
        // Hidden in a comment, a script or behind a quoted ">", a tag is still counted.
        for wrapped in [
            format!("<!-- --><x{giant}>"),
            format!("<script>//</script><x{giant}>"),
            format!("<script><!--</script><x{giant}>-->"),
            format!("<a title=\"-->\"><x{giant}>"),
            format!("</x{giant}>"),
        ] {
            assert!(
                refused(&wrapped).contains("attribute pairs"),
                "{wrapped:.40}"
            );
        }
        assert_eq!(attribute_pairs(b"<a href=\"x > y\" b c=d e='f'>"), (6, 4));
        assert_eq!(attribute_pairs(b"a < b and c > d"), (0, 0));
        // A page of ordinary tags reads.
        let page = format!("<p{}>text</p>", attributes(50)).repeat(2000);
        assert!(
            crate::parse::parse(SourceKind::Html, page.as_bytes(), &ParseLimits::default()).is_ok()
        );
    }

    #[test]
    fn wide_pages_read() {
        let wide = "<div>word</div>".repeat(20_000);
        let parsed =
            crate::parse::parse(SourceKind::Html, wide.as_bytes(), &ParseLimits::default())
                .unwrap();
        assert_eq!(parsed.sections.len(), 1);
        // Deeply nested articles are sized in one walk.
        let nested = "<article>".repeat(1500) + &"<i>word</i> ".repeat(5000);
        let parsed =
            crate::parse::parse(SourceKind::Html, nested.as_bytes(), &ParseLimits::default())
                .unwrap();
        assert_eq!(parsed.sections[0].text.split(' ').count(), 5000);
    }

    #[test]
    fn html_sniffing() {
        assert!(looks_like_html(b"  \n<!DocType html>"));
        assert!(looks_like_html(b"\xEF\xBB\xBF<HTML>"));
        assert!(!looks_like_html(b"<p>fragment</p>"));
        assert!(!looks_like_html(b"<htm"));
    }
}
