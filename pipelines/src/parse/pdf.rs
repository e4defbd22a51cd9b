//! PDF: one section per page, path `Page N`, from our own content-stream text walker.
//!
//! lopdf loads the file (trying the empty user password on encrypted files; a file that still
//! cannot be read is [`ParseError::Encrypted`]) and decodes streams under a decompression
//! budget of [`ParseLimits::max_unpacked_bytes`] for the whole file. The walker follows the
//! text and graphics state (`BT`/`Tf`/`Td`/`TD`/`T*`/`Tm`/`TL`/`Tc`/`Tw`/`Tz`/`cm`/`q`/`Q`),
//! shows `Tj`/`TJ`/`'`/`"` strings through each font's encoding (its ToUnicode CMap when it has
//! one, else lopdf's simple encodings), and decides separators from glyph positions: a
//! horizontal gap over 0.2 em or a TJ kerning gap over 0.2 em is a space, a move to another
//! line a newline, a larger vertical jump (over 1.8 line heights, or upwards) a blank line.
//! Glyph advances come from the fonts' `/Widths` (`/W` for CID fonts), 0.5 em when missing.
//! Form XObjects are walked for text too (depth 8, no form twice on one path).
//!
//! A page whose text has fewer than 20 non-space characters hands its image XObjects to OCR
//! ([`super::pdf_image`]), with path `Page N` and the position where its section goes. An
//! image is handed over once, on the first page that draws it, however many pages draw it.
//! Limits: pages ([`ParseLimits::max_pages`]); pixels per image, measured from the image's
//! own header where it has one (a JPEG's frame header, not the dictionary's `/Width` and
//! `/Height`, which may lie): an image over [`ParseLimits::max_image_pixels`] is skipped with
//! a warning, and if that leaves nothing the file is a limit error; pixels of all the images
//! handed over ([`ParseLimits::max_total_pixels`]); bytes of all the decoded streams and
//! images together ([`ParseLimits::max_unpacked_bytes`]); output text. A page tree whose
//! `/Kids` refer back to an ancestor is corrupt.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use lopdf::content::Content;
use lopdf::{Dictionary, Document, Encoding, LoadOptions, Object, ObjectId};

use super::image::check_pixels;
use super::pdf_image::{self, Extracted};
use super::sink::Sections;
use super::{Keep, ParseError, ParseLimits};
use crate::model::{PageImage, Parsed};

const KIND: &str = "pdf";
/// Pages with fewer non-space characters than this go to OCR.
const MIN_TEXT_CHARS: usize = 20;
const MAX_FORM_DEPTH: usize = 8;
/// Content operations per file, all pages and forms together.
const MAX_OPERATIONS: u64 = 20_000_000;

pub(crate) fn parse(bytes: &[u8], limits: &ParseLimits, keep: &Keep) -> Result<Parsed, ParseError> {
    let budget_bytes = usize::try_from(limits.max_unpacked_bytes).unwrap_or(usize::MAX);
    let options = LoadOptions {
        max_decompressed_size: Some(budget_bytes),
        ..LoadOptions::default()
    };
    let doc = match Document::load_mem_with_options(bytes, options) {
        Ok(doc) => doc,
        Err(err) => {
            tracing::debug!(error = %err, "pdf load failed");
            if matches!(
                err,
                lopdf::Error::InvalidPassword | lopdf::Error::Decryption(_)
            ) {
                return Err(ParseError::Encrypted);
            }
            if let lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded {
                ..
            }) = err
            {
                return Err(unpacked_limit(limits));
            }
            return Err(ParseError::corrupt(KIND, "the file could not be read"));
        }
    };
    if doc.trailer.has(b"Encrypt") && !doc.was_encrypted() {
        return Err(ParseError::Encrypted);
    }
    check_page_tree(&doc)?;
    let pages = doc.get_pages();
    if pages.is_empty() {
        return Err(ParseError::corrupt(KIND, "the file has no pages"));
    }
    if pages.len() > limits.max_pages as usize {
        return Err(ParseError::Limit(format!(
            "the pdf has {} pages; the limit is {} pages",
            pages.len(),
            limits.max_pages
        )));
    }
    let mut ctx = Context {
        doc: &doc,
        limits,
        fonts: HashMap::new(),
        budget: limits.max_unpacked_bytes,
        operations: 0,
    };
    let mut out = Sections::new(limits.max_text_bytes);
    let mut images = Vec::new();
    let mut too_big: Option<(u64, u64)> = None;
    // Images already handed over (or refused): each is OCR'd once, on its first page.
    let mut handled: HashSet<ObjectId> = HashSet::new();
    let mut pixels_left = limits.max_total_pixels;
    for (&number, &page_id) in &pages {
        let page = ctx.page(page_id)?;
        let path = format!("Page {number}");
        let chars = page.text.chars().filter(|c| !c.is_whitespace()).count();
        if chars < MIN_TEXT_CHARS {
            let position = out.len();
            for image_id in &page.images {
                if !handled.insert(*image_id) {
                    continue;
                }
                let Ok(stream) = doc.get_object(*image_id).and_then(Object::as_stream) else {
                    continue;
                };
                // An image whose bytes are not kept is decoded, checked and charged all the
                // same: every call finds the same images, and decoding costs the same whatever
                // is kept.
                let kept = keep.keeps(images.len());
                match pdf_image::extract(&doc, stream, limits.max_image_pixels, &mut ctx.budget) {
                    Extracted::Image { data, pixels } => {
                        pixels_left = pixels_left.checked_sub(pixels).ok_or_else(|| {
                            ParseError::Limit(format!(
                                "the pdf's images add up to more than the limit of {} pixels",
                                limits.max_total_pixels
                            ))
                        })?;
                        images.push(PageImage {
                            path: path.clone(),
                            position,
                            data: if kept { data } else { Vec::new() },
                        });
                    }
                    Extracted::OverBudget => return Err(unpacked_limit(limits)),
                    Extracted::TooBig(w, h) => {
                        tracing::warn!(
                            page = number,
                            width = w,
                            height = h,
                            "pdf image over the pixel cap skipped"
                        );
                        too_big = Some((w, h));
                    }
                    Extracted::Skipped(why) => {
                        tracing::debug!(page = number, reason = why, "pdf image skipped");
                    }
                }
            }
        }
        out.push(path, page.text)?;
    }
    if out.len() == 0 && images.is_empty() {
        if let Some((w, h)) = too_big {
            check_pixels(w, h, limits)?;
        }
    }
    Ok(Parsed {
        sections: out.into_vec(),
        images,
        pages: u32::try_from(pages.len()).unwrap_or(u32::MAX),
    })
}

fn unpacked_limit(limits: &ParseLimits) -> ParseError {
    ParseError::Limit(format!(
        "the pdf's streams and images unpack to more than the limit of {} bytes",
        limits.max_unpacked_bytes
    ))
}

/// Walks the page tree from the catalog the way lopdf's page iterator does (the same `/Kids`,
/// the same cap on visits: one per object) and fails on a `/Kids` entry that refers back to a
/// node on the path from the root: lopdf would not loop for ever, but it would hand the same
/// pages over and over until its visit cap. The walk keeps its own stack: no recursion.
fn check_page_tree(doc: &Document) -> Result<(), ParseError> {
    let kids = |id: ObjectId| -> &[Object] {
        doc.get_dictionary(id)
            .and_then(|node| node.get_deref(b"Kids", doc))
            .and_then(Object::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    };
    let Ok(root) = doc
        .catalog()
        .and_then(|catalog| catalog.get(b"Pages"))
        .and_then(Object::as_reference)
    else {
        return Ok(());
    };
    let mut path: Vec<(ObjectId, &[Object])> = vec![(root, kids(root))];
    let mut on_path: HashSet<ObjectId> = HashSet::from([root]);
    let mut visits_left = doc.objects.len();
    while let Some((node, rest)) = path.last_mut() {
        let Some((kid, tail)) = rest.split_first() else {
            on_path.remove(node);
            path.pop();
            continue;
        };
        *rest = tail;
        if visits_left == 0 {
            break;
        }
        visits_left -= 1;
        let Ok(id) = kid.as_reference() else {
            continue;
        };
        let is_node = doc
            .get_dictionary(id)
            .and_then(Dictionary::get_type)
            .is_ok_and(|t| t == b"Pages");
        if !is_node {
            continue;
        }
        if !on_path.insert(id) {
            return Err(ParseError::corrupt(
                KIND,
                "the page tree loops: a /Kids entry refers back to an ancestor",
            ));
        }
        path.push((id, kids(id)));
    }
    Ok(())
}

/// A page's text and the image XObjects it draws, in drawing order.
struct PageContent {
    text: String,
    images: Vec<ObjectId>,
}

/// What we know of a font: how to decode its strings and how wide its glyphs are.
struct Font<'a> {
    encoding: Option<Encoding<'a>>,
    /// CID fonts (`Type0`) use two-byte codes.
    two_byte: bool,
    widths: HashMap<u32, f32>,
    default_width: f32,
}

#[derive(Hash, PartialEq, Eq)]
enum FontKey {
    Ref(ObjectId),
    Inline(usize),
}

struct Context<'a> {
    doc: &'a Document,
    limits: &'a ParseLimits,
    fonts: HashMap<FontKey, Rc<Font<'a>>>,
    budget: u64,
    operations: u64,
}

type Matrix = [f32; 6];
const IDENTITY: Matrix = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];

/// `a` then `b`.
fn mul(a: &Matrix, b: &Matrix) -> Matrix {
    [
        a[0] * b[0] + a[1] * b[2],
        a[0] * b[1] + a[1] * b[3],
        a[2] * b[0] + a[3] * b[2],
        a[2] * b[1] + a[3] * b[3],
        a[4] * b[0] + a[5] * b[2] + b[4],
        a[4] * b[1] + a[5] * b[3] + b[5],
    ]
}

fn translate(x: f32, y: f32) -> Matrix {
    [1.0, 0.0, 0.0, 1.0, x, y]
}

fn matrix_of(operands: &[Object]) -> Option<Matrix> {
    if operands.len() < 6 {
        return None;
    }
    let mut m = [0.0; 6];
    for (slot, obj) in m.iter_mut().zip(operands) {
        *slot = obj.as_float().ok()?;
    }
    m.iter().all(|v| v.is_finite()).then_some(m)
}

fn num(operands: &[Object], i: usize) -> f32 {
    operands
        .get(i)
        .and_then(|o| o.as_float().ok())
        .filter(|v| v.is_finite())
        .unwrap_or(0.0)
}

#[derive(Clone)]
struct GState<'a> {
    ctm: Matrix,
    font: Option<Rc<Font<'a>>>,
    size: f32,
    char_spacing: f32,
    word_spacing: f32,
    scale: f32,
    leading: f32,
    rise: f32,
}

/// The text being assembled for a page, with the end of the last glyph drawn.
struct TextOut {
    text: String,
    /// Device-space end of the last shown string: (x, y, font size).
    last: Option<(f32, f32, f32)>,
}

impl TextOut {
    fn separate(&mut self, x: f32, y: f32, size: f32) {
        let Some((lx, ly, lsize)) = self.last else {
            return;
        };
        let size = size.abs().max(lsize.abs()).max(1.0);
        let dy = ly - y;
        if dy.abs() > size * 0.5 {
            if dy > size * 1.2 * 1.8 || dy < -size * 0.5 {
                self.push_break("\n\n");
            } else {
                self.push_break("\n");
            }
        } else if x - lx > size * 0.2 {
            self.push_space();
        }
    }

    fn push_space(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with(char::is_whitespace) {
            self.text.push(' ');
        }
    }

    fn push_break(&mut self, brk: &str) {
        while self.text.ends_with(' ') {
            self.text.pop();
        }
        if self.text.is_empty() {
            return;
        }
        if brk == "\n\n" {
            while self.text.ends_with('\n') {
                self.text.pop();
            }
            self.text.push_str("\n\n");
        } else if !self.text.ends_with('\n') {
            self.text.push('\n');
        }
    }
}

struct Walk {
    text: TextOut,
    images: Vec<ObjectId>,
    seen_images: HashSet<ObjectId>,
}

impl<'a> Context<'a> {
    fn page(&mut self, page_id: ObjectId) -> Result<PageContent, ParseError> {
        let doc = self.doc;
        let mut resources: Vec<&'a Dictionary> = Vec::new();
        if let Ok((inline, ids)) = doc.get_page_resources(page_id) {
            resources.extend(inline);
            resources.extend(ids.iter().filter_map(|id| doc.get_dictionary(*id).ok()));
        }
        let limit = usize::try_from(self.budget).unwrap_or(usize::MAX);
        let content = match doc.get_page_content_with_limit(page_id, limit) {
            Ok(content) => content,
            Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded {
                ..
            })) => return Err(unpacked_limit(self.limits)),
            Err(err) => {
                tracing::debug!(error = %err, "pdf page content unreadable");
                Vec::new()
            }
        };
        self.budget = self.budget.saturating_sub(content.len() as u64);
        let mut walk = Walk {
            text: TextOut {
                text: String::new(),
                last: None,
            },
            images: Vec::new(),
            seen_images: HashSet::new(),
        };
        let state = GState {
            ctm: IDENTITY,
            font: None,
            size: 0.0,
            char_spacing: 0.0,
            word_spacing: 0.0,
            scale: 1.0,
            leading: 0.0,
            rise: 0.0,
        };
        let mut forms = Vec::new();
        self.walk(&content, &resources, state, &mut walk, &mut forms)?;
        Ok(PageContent {
            text: tidy(&walk.text.text),
            images: walk.images,
        })
    }

    /// Looks `name` up in `category` (`Font`, `XObject`) of the innermost resources first.
    fn resource(
        &self,
        resources: &[&'a Dictionary],
        category: &[u8],
        name: &[u8],
    ) -> Option<(Option<ObjectId>, &'a Object)> {
        let doc = self.doc;
        resources.iter().find_map(|res| {
            let (_, cat) = doc.dereference(res.get(category).ok()?).ok()?;
            let entry = cat.as_dict().ok()?.get(name).ok()?;
            doc.dereference(entry).ok()
        })
    }

    fn font(&mut self, resources: &[&'a Dictionary], name: &[u8]) -> Option<Rc<Font<'a>>> {
        let (id, obj) = self.resource(resources, b"Font", name)?;
        let dict = obj.as_dict().ok()?;
        let key = match id {
            Some(id) => FontKey::Ref(id),
            None => FontKey::Inline(dict as *const Dictionary as usize),
        };
        if let Some(font) = self.fonts.get(&key) {
            return Some(font.clone());
        }
        let font = Rc::new(self.load_font(dict));
        self.fonts.insert(key, font.clone());
        Some(font)
    }

    fn load_font(&mut self, dict: &'a Dictionary) -> Font<'a> {
        let doc = self.doc;
        let limit = usize::try_from(self.budget.min(16 << 20)).unwrap_or(16 << 20);
        let subtype = dict
            .get(b"Subtype")
            .and_then(Object::as_name)
            .unwrap_or(b"");
        let two_byte = subtype == b"Type0";
        // Prefer the ToUnicode CMap, which lopdf only consults when /Encoding is absent.
        let mut encoding = None;
        if let Ok(to_unicode) = dict.get(b"ToUnicode") {
            let mut probe = Dictionary::new();
            probe.set("Type", Object::Name(b"Font".to_vec()));
            probe.set("ToUnicode", to_unicode.clone());
            if let Ok(Encoding::UnicodeMapEncoding(cmap)) =
                probe.get_font_encoding_with_limit(doc, limit)
            {
                encoding = Some(Encoding::UnicodeMapEncoding(cmap));
            }
        }
        if encoding.is_none() && !two_byte {
            encoding = dict.get_font_encoding_with_limit(doc, limit).ok();
        }
        let (widths, default_width) = if two_byte {
            cid_widths(doc, dict)
        } else {
            simple_widths(doc, dict)
        };
        Font {
            encoding,
            two_byte,
            widths,
            default_width,
        }
    }

    fn walk(
        &mut self,
        content: &[u8],
        resources: &[&'a Dictionary],
        mut state: GState<'a>,
        walk: &mut Walk,
        forms: &mut Vec<ObjectId>,
    ) -> Result<(), ParseError> {
        let Ok(content) = Content::decode(content) else {
            tracing::debug!("pdf content stream could not be parsed");
            return Ok(());
        };
        self.operations += content.operations.len() as u64;
        if self.operations > MAX_OPERATIONS {
            return Err(ParseError::Limit(
                "the pdf has too many drawing operations to read".into(),
            ));
        }
        let mut stack: Vec<GState<'a>> = Vec::new();
        let mut tm = IDENTITY;
        let mut tlm = IDENTITY;
        for op in &content.operations {
            let operands = op.operands.as_slice();
            match op.operator.as_str() {
                "q" if stack.len() < 64 => stack.push(state.clone()),
                "Q" => {
                    if let Some(saved) = stack.pop() {
                        state = saved;
                    }
                }
                "cm" => {
                    if let Some(m) = matrix_of(operands) {
                        state.ctm = mul(&m, &state.ctm);
                    }
                }
                "BT" => {
                    tm = IDENTITY;
                    tlm = IDENTITY;
                }
                "Tf" => {
                    state.size = num(operands, 1);
                    state.font = operands
                        .first()
                        .and_then(|o| o.as_name().ok())
                        .and_then(|name| self.font(resources, name));
                }
                "Tc" => state.char_spacing = num(operands, 0),
                "Tw" => state.word_spacing = num(operands, 0),
                "Tz" => state.scale = num(operands, 0) / 100.0,
                "TL" => state.leading = num(operands, 0),
                "Ts" => state.rise = num(operands, 0),
                "Td" | "TD" => {
                    let (tx, ty) = (num(operands, 0), num(operands, 1));
                    if op.operator == "TD" {
                        state.leading = -ty;
                    }
                    tlm = mul(&translate(tx, ty), &tlm);
                    tm = tlm;
                }
                "Tm" => {
                    if let Some(m) = matrix_of(operands) {
                        tlm = m;
                        tm = m;
                    }
                }
                "T*" => {
                    tlm = mul(&translate(0.0, -state.leading), &tlm);
                    tm = tlm;
                }
                "Tj" => {
                    if let Some(Object::String(bytes, _)) = operands.first() {
                        self.show(bytes, &state, &mut tm, walk, true);
                    }
                }
                "'" | "\"" => {
                    if op.operator == "\"" {
                        state.word_spacing = num(operands, 0);
                        state.char_spacing = num(operands, 1);
                    }
                    tlm = mul(&translate(0.0, -state.leading), &tlm);
                    tm = tlm;
                    if let Some(Object::String(bytes, _)) = operands.last() {
                        self.show(bytes, &state, &mut tm, walk, true);
                    }
                }
                "TJ" => {
                    let Some(Object::Array(items)) = operands.first() else {
                        continue;
                    };
                    let mut first = true;
                    for item in items {
                        match item {
                            Object::String(bytes, _) => {
                                self.show(bytes, &state, &mut tm, walk, first);
                                first = false;
                            }
                            other => {
                                let Ok(kern) = other.as_float() else {
                                    continue;
                                };
                                if !kern.is_finite() {
                                    continue;
                                }
                                // A kerning gap wider than 0.2 em separates words.
                                if -kern > 200.0 {
                                    walk.text.push_space();
                                }
                                let dx = -kern / 1000.0 * state.size * state.scale;
                                tm = mul(&translate(dx, 0.0), &tm);
                            }
                        }
                    }
                }
                "Do" => {
                    if let Some(name) = operands.first().and_then(|o| o.as_name().ok()) {
                        self.draw_xobject(resources, name, &state, walk, forms)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn draw_xobject(
        &mut self,
        resources: &[&'a Dictionary],
        name: &[u8],
        state: &GState<'a>,
        walk: &mut Walk,
        forms: &mut Vec<ObjectId>,
    ) -> Result<(), ParseError> {
        let Some((Some(id), obj)) = self.resource(resources, b"XObject", name) else {
            return Ok(());
        };
        let Ok(stream) = obj.as_stream() else {
            return Ok(());
        };
        match stream.dict.get(b"Subtype").and_then(Object::as_name) {
            Ok(b"Image") if walk.seen_images.insert(id) => walk.images.push(id),
            Ok(b"Image") => {}
            Ok(b"Form") => {
                if forms.len() >= MAX_FORM_DEPTH || forms.contains(&id) {
                    return Ok(());
                }
                let limit = usize::try_from(self.budget).unwrap_or(usize::MAX);
                let data = match stream.decompressed_content_with_limit(limit) {
                    Ok(data) => data,
                    Err(lopdf::Error::Decompress(
                        lopdf::DecompressError::MemoryLimitExceeded { .. },
                    )) => return Err(unpacked_limit(self.limits)),
                    Err(_) => return Ok(()),
                };
                self.budget = self.budget.saturating_sub(data.len() as u64);
                let mut inner: Vec<&'a Dictionary> = Vec::with_capacity(resources.len() + 1);
                if let Ok(res) = stream.dict.get(b"Resources") {
                    if let Ok((_, Object::Dictionary(res))) = self.doc.dereference(res) {
                        inner.push(res);
                    }
                }
                inner.extend_from_slice(resources);
                let mut form_state = state.clone();
                if let Some(m) = stream
                    .dict
                    .get(b"Matrix")
                    .ok()
                    .and_then(|m| m.as_array().ok())
                    .and_then(|a| matrix_of(a))
                {
                    form_state.ctm = mul(&m, &state.ctm);
                }
                forms.push(id);
                let result = self.walk(&data, &inner, form_state, walk, forms);
                forms.pop();
                result?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Shows one string: decodes it, separates it from the previous text by position, and
    /// advances the text matrix by the glyphs' widths.
    fn show(
        &self,
        bytes: &[u8],
        state: &GState<'a>,
        tm: &mut Matrix,
        walk: &mut Walk,
        check_gap: bool,
    ) {
        let Some(font) = state.font.as_ref() else {
            return;
        };
        let trm = mul(tm, &state.ctm);
        let (x, y) = (trm[2] * state.rise + trm[4], trm[3] * state.rise + trm[5]);
        let device_size = state.size * trm[2].hypot(trm[3]);
        let decoded = match &font.encoding {
            Some(encoding) => encoding.bytes_to_string(bytes).unwrap_or_default(),
            None if !font.two_byte => bytes.iter().map(|b| *b as char).collect(),
            None => String::new(),
        };
        let decoded: String = decoded
            .chars()
            .map(|c| if c == '\u{A0}' || c == '\t' { ' ' } else { c })
            .filter(|c| !c.is_control() && *c != '\u{FFFD}')
            .collect();
        if check_gap {
            walk.text.separate(x, y, device_size);
        }
        walk.text.text.push_str(&decoded);

        // Advance by the glyph widths.
        let mut advance = 0.0;
        let codes: Vec<u32> = if font.two_byte {
            bytes
                .chunks(2)
                .map(|c| c.iter().fold(0u32, |acc, b| acc << 8 | *b as u32))
                .collect()
        } else {
            bytes.iter().map(|b| *b as u32).collect()
        };
        for code in codes {
            let w = font
                .widths
                .get(&code)
                .copied()
                .unwrap_or(font.default_width);
            advance += w / 1000.0 * state.size + state.char_spacing;
            if !font.two_byte && code == 32 {
                advance += state.word_spacing;
            }
        }
        *tm = mul(&translate(advance * state.scale, 0.0), tm);
        let end = mul(tm, &state.ctm);
        walk.text.last = Some((
            end[2] * state.rise + end[4],
            end[3] * state.rise + end[5],
            device_size,
        ));
    }
}

fn deref_array<'a>(doc: &'a Document, dict: &'a Dictionary, key: &[u8]) -> Option<&'a [Object]> {
    let (_, obj) = doc.dereference(dict.get(key).ok()?).ok()?;
    obj.as_array().ok().map(Vec::as_slice)
}

fn deref_num(doc: &Document, obj: &Object) -> Option<f32> {
    doc.dereference(obj).ok()?.1.as_float().ok()
}

/// `/FirstChar` + `/Widths` of a simple font.
fn simple_widths(doc: &Document, dict: &Dictionary) -> (HashMap<u32, f32>, f32) {
    let mut widths = HashMap::new();
    let first = dict
        .get(b"FirstChar")
        .ok()
        .and_then(|o| deref_num(doc, o))
        .unwrap_or(0.0)
        .max(0.0) as u32;
    if let Some(items) = deref_array(doc, dict, b"Widths") {
        for (i, w) in items.iter().take(256).enumerate() {
            if let Some(w) = deref_num(doc, w) {
                widths.insert(first + i as u32, w);
            }
        }
    }
    let default = if widths.is_empty() { 500.0 } else { 0.0 };
    let missing = dict
        .get(b"FontDescriptor")
        .ok()
        .and_then(|o| doc.dereference(o).ok())
        .and_then(|(_, o)| o.as_dict().ok())
        .and_then(|d| d.get(b"MissingWidth").ok())
        .and_then(|o| deref_num(doc, o));
    (widths, missing.unwrap_or(default))
}

/// `/W` and `/DW` of a CID font's descendant.
fn cid_widths(doc: &Document, dict: &Dictionary) -> (HashMap<u32, f32>, f32) {
    let mut widths = HashMap::new();
    let descendant = deref_array(doc, dict, b"DescendantFonts")
        .and_then(|a| a.first())
        .and_then(|o| doc.dereference(o).ok())
        .and_then(|(_, o)| o.as_dict().ok());
    let Some(descendant) = descendant else {
        return (widths, 1000.0);
    };
    let default = descendant
        .get(b"DW")
        .ok()
        .and_then(|o| deref_num(doc, o))
        .unwrap_or(1000.0);
    if let Some(items) = deref_array(doc, descendant, b"W") {
        let mut i = 0;
        while i < items.len() && widths.len() < 65_536 {
            let Some(first) = deref_num(doc, &items[i]) else {
                break;
            };
            let first = first.max(0.0) as u32;
            match items.get(i + 1).map(|o| doc.dereference(o)) {
                Some(Ok((_, Object::Array(list)))) => {
                    for (j, w) in list.iter().take(65_536).enumerate() {
                        if let Some(w) = deref_num(doc, w) {
                            widths.insert(first + j as u32, w);
                        }
                    }
                    i += 2;
                }
                Some(Ok((_, last))) => {
                    let last = last.as_float().unwrap_or(0.0).max(0.0) as u32;
                    let w = items.get(i + 2).and_then(|o| deref_num(doc, o));
                    if let Some(w) = w {
                        for code in first..=last.min(first.saturating_add(65_536)) {
                            widths.insert(code, w);
                        }
                    }
                    i += 3;
                }
                _ => break,
            }
        }
    }
    (widths, default)
}

/// Trims lines, collapses runs of spaces and of blank lines.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line
            .split(' ')
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if line.is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(&line);
    }
    out
}

#[cfg(test)]
mod tests;
