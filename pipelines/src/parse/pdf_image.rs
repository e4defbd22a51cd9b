//! PDF image XObjects -> bytes Leptonica reads from memory, for OCR of scanned pages.
//!
//! - `DCTDecode`: the stream as-is (a JPEG file), sized by its own frame header (the decoder
//!   allocates from that, whatever the dictionary says).
//! - `CCITTFaxDecode`: the raw stream in a minimal single-strip TIFF (Compression 4 when
//!   `K < 0`, else 3 with T4Options bit 0 when `K > 0`; WhiteIsZero unless `BlackIs1`).
//! - Flate/LZW/ASCII filters or none (decoded by lopdf, PNG predictors undone), 8-bit
//!   DeviceGray/DeviceRGB (or ICCBased with 1/3 components) -> binary PNM (P5/P6); 1-bit gray
//!   or image masks -> P4 (PDF's 1 = white is inverted unless `Decode [1 0]`).
//! - Anything else (JPX, JBIG2, CMYK, indexed, other depths) is skipped.

use lopdf::{Dictionary, Document, Object, Stream};

use super::image::jpeg_frame_size;

/// What became of one image.
pub(crate) enum Extracted {
    /// Bytes for OCR, and the pixels a decoder will allocate for them.
    Image {
        data: Vec<u8>,
        pixels: u64,
    },
    /// Over the pixel cap: `(width, height)`.
    TooBig(u64, u64),
    /// Over what is left of the decompression budget.
    OverBudget,
    Skipped(&'static str),
}

/// Charges `data` to the budget and hands it over.
fn image(data: Vec<u8>, pixels: u64, budget: &mut u64) -> Extracted {
    match budget.checked_sub(data.len() as u64) {
        Some(left) => {
            *budget = left;
            Extracted::Image { data, pixels }
        }
        None => Extracted::OverBudget,
    }
}

fn int(doc: &Document, dict: &Dictionary, key: &[u8]) -> Option<i64> {
    let obj = dict.get(key).ok()?;
    let (_, obj) = doc.dereference(obj).ok()?;
    obj.as_i64().ok()
}

fn boolean(doc: &Document, dict: &Dictionary, key: &[u8]) -> Option<bool> {
    let obj = dict.get(key).ok()?;
    let (_, obj) = doc.dereference(obj).ok()?;
    obj.as_bool().ok()
}

/// The stream's filter names, in decoding order.
fn filters(doc: &Document, dict: &Dictionary) -> Vec<Vec<u8>> {
    let Ok(obj) = dict.get(b"Filter") else {
        return Vec::new();
    };
    let Ok((_, obj)) = doc.dereference(obj) else {
        return Vec::new();
    };
    match obj {
        Object::Name(name) => vec![name.clone()],
        Object::Array(items) => items
            .iter()
            .filter_map(|o| o.as_name().ok().map(<[u8]>::to_vec))
            .collect(),
        _ => Vec::new(),
    }
}

/// The `DecodeParms` dictionary of the last filter, if any.
fn decode_parms<'a>(doc: &'a Document, dict: &'a Dictionary) -> Option<&'a Dictionary> {
    let obj = dict.get(b"DecodeParms").ok()?;
    let (_, obj) = doc.dereference(obj).ok()?;
    match obj {
        Object::Dictionary(d) => Some(d),
        Object::Array(items) => {
            let (_, last) = doc.dereference(items.last()?).ok()?;
            last.as_dict().ok()
        }
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Space {
    Gray,
    Rgb,
    Other,
}

fn color_space(doc: &Document, dict: &Dictionary) -> Space {
    let Ok(obj) = dict.get(b"ColorSpace") else {
        return Space::Other;
    };
    let Ok((_, obj)) = doc.dereference(obj) else {
        return Space::Other;
    };
    match obj {
        Object::Name(n) if n == b"DeviceGray" || n == b"CalGray" || n == b"G" => Space::Gray,
        Object::Name(n) if n == b"DeviceRGB" || n == b"CalRGB" || n == b"RGB" => Space::Rgb,
        Object::Array(items) => {
            let family = items.first().and_then(|o| o.as_name().ok());
            match family {
                Some(b"CalGray") => Space::Gray,
                Some(b"CalRGB") => Space::Rgb,
                Some(b"ICCBased") => {
                    let n = items
                        .get(1)
                        .and_then(|o| doc.dereference(o).ok())
                        .and_then(|(_, o)| o.as_stream().ok())
                        .and_then(|s| int(doc, &s.dict, b"N"));
                    match n {
                        Some(1) => Space::Gray,
                        Some(3) => Space::Rgb,
                        _ => Space::Other,
                    }
                }
                _ => Space::Other,
            }
        }
        _ => Space::Other,
    }
}

/// Whether `Decode` is `[1 0]` (inverted samples).
fn decode_inverted(doc: &Document, dict: &Dictionary) -> bool {
    let Ok(obj) = dict.get(b"Decode") else {
        return false;
    };
    let Ok((_, Object::Array(items))) = doc.dereference(obj) else {
        return false;
    };
    let values: Vec<f32> = items.iter().filter_map(|o| o.as_float().ok()).collect();
    values.len() == 2 && values[0] > values[1]
}

/// Encodes one image XObject; `budget` is what is left of the decompression allowance and is
/// charged for decoded samples and for the bytes handed over.
pub(crate) fn extract(
    doc: &Document,
    stream: &Stream,
    max_pixels: u64,
    budget: &mut u64,
) -> Extracted {
    let dict = &stream.dict;
    let width = int(doc, dict, b"Width").unwrap_or(0);
    let height = int(doc, dict, b"Height").unwrap_or(0);
    if width <= 0 || height <= 0 || width > 1 << 20 || height > 1 << 20 {
        return Extracted::Skipped("no usable size");
    }
    let (width, height) = (width as u64, height as u64);
    if width * height > max_pixels {
        return Extracted::TooBig(width, height);
    }
    let filters = filters(doc, dict);
    let last = filters.last().map(Vec::as_slice);
    match last {
        Some(b"DCTDecode") | Some(b"DCT") if filters.len() == 1 => {
            // The JPEG's own frame header is what a decoder allocates from.
            let Some((w, h)) = jpeg_frame_size(&stream.content) else {
                return Extracted::Skipped("unreadable jpeg frame header");
            };
            if w.saturating_mul(h) > max_pixels {
                return Extracted::TooBig(w, h);
            }
            if (stream.content.len() as u64) > *budget {
                return Extracted::OverBudget;
            }
            image(stream.content.clone(), w * h, budget)
        }
        Some(b"CCITTFaxDecode") | Some(b"CCF") if filters.len() == 1 => {
            let parms = decode_parms(doc, dict);
            let p = |key: &[u8]| parms.and_then(|d| int(doc, d, key));
            let k = p(b"K").unwrap_or(0);
            let columns = p(b"Columns")
                .filter(|c| *c > 0)
                .map(|c| c as u64)
                .unwrap_or(width);
            let rows = p(b"Rows")
                .filter(|r| *r > 0)
                .map(|r| r as u64)
                .unwrap_or(height);
            let black_is_1 = parms
                .and_then(|d| boolean(doc, d, b"BlackIs1"))
                .unwrap_or(false);
            let byte_align = parms
                .and_then(|d| boolean(doc, d, b"EncodedByteAlign"))
                .unwrap_or(false);
            if columns > 1 << 20 || rows > 1 << 20 {
                return Extracted::Skipped("no usable size");
            }
            if columns * rows > max_pixels {
                return Extracted::TooBig(columns, rows);
            }
            if (stream.content.len() as u64) > *budget {
                return Extracted::OverBudget;
            }
            let tiff = ccitt_tiff(
                &stream.content,
                columns as u32,
                rows as u32,
                k,
                black_is_1,
                byte_align,
            );
            image(tiff, columns * rows, budget)
        }
        Some(b"JPXDecode") | Some(b"JBIG2Decode") => Extracted::Skipped("jpx or jbig2"),
        _ => raw_samples(doc, stream, width, height, budget),
    }
}

fn raw_samples(
    doc: &Document,
    stream: &Stream,
    width: u64,
    height: u64,
    budget: &mut u64,
) -> Extracted {
    let dict = &stream.dict;
    let image_mask = boolean(doc, dict, b"ImageMask").unwrap_or(false);
    let bits = if image_mask {
        1
    } else {
        int(doc, dict, b"BitsPerComponent").unwrap_or(8)
    };
    let space = if image_mask {
        Space::Gray
    } else {
        color_space(doc, dict)
    };
    let (magic, stride) = match (space, bits) {
        (Space::Gray, 8) => ("P5", width),
        (Space::Rgb, 8) => ("P6", width * 3),
        (Space::Gray, 1) => ("P4", width.div_ceil(8)),
        _ => return Extracted::Skipped("unsupported colour space or depth"),
    };
    let needed = stride * height;
    if needed > *budget {
        return Extracted::OverBudget;
    }
    let allowed = (*budget).min(needed.saturating_mul(2).saturating_add(1024));
    let Ok(data) = stream.decompressed_content_with_limit(allowed as usize) else {
        return Extracted::Skipped("samples could not be decoded");
    };
    *budget = budget.saturating_sub(data.len() as u64);
    if (data.len() as u64) < needed {
        return Extracted::Skipped("truncated samples");
    }
    let mut samples = data[..needed as usize].to_vec();
    if magic == "P4" {
        // PDF: sample 1 = white (or "do not paint" for masks); PBM: 1 = black.
        if !decode_inverted(doc, dict) {
            for byte in &mut samples {
                *byte = !*byte;
            }
        }
    } else if decode_inverted(doc, dict) {
        for byte in &mut samples {
            *byte = 255 - *byte;
        }
    }
    let mut out = if magic == "P4" {
        format!("{magic}\n{width} {height}\n").into_bytes()
    } else {
        format!("{magic}\n{width} {height}\n255\n").into_bytes()
    };
    out.extend_from_slice(&samples);
    Extracted::Image {
        data: out,
        pixels: width * height,
    }
}

/// A little-endian single-strip TIFF around CCITT data.
pub(crate) fn ccitt_tiff(
    data: &[u8],
    width: u32,
    height: u32,
    k: i64,
    black_is_1: bool,
    byte_align: bool,
) -> Vec<u8> {
    const SHORT: u16 = 3;
    const LONG: u16 = 4;
    let compression: u32 = if k < 0 { 4 } else { 3 };
    let photometric: u32 = if black_is_1 { 1 } else { 0 };
    let mut entries: Vec<(u16, u16, u32)> = vec![
        (256, LONG, width),
        (257, LONG, height),
        (258, SHORT, 1),
        (259, SHORT, compression),
        (262, SHORT, photometric),
        (273, LONG, 0), // strip offset, patched below
        (277, SHORT, 1),
        (278, LONG, height),
        (279, LONG, data.len() as u32),
    ];
    let align = if byte_align { 4 } else { 0 };
    if compression == 3 {
        let two_d = if k > 0 { 1 } else { 0 };
        entries.push((292, LONG, two_d | align));
    } else {
        entries.push((293, LONG, 0));
    }
    let ifd_len = 2 + entries.len() * 12 + 4;
    let data_offset = (8 + ifd_len) as u32;
    let mut out = Vec::with_capacity(data_offset as usize + data.len());
    out.extend_from_slice(b"II*\0");
    out.extend_from_slice(&8u32.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    for (tag, kind, value) in entries {
        let value = if tag == 273 { data_offset } else { value };
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        if kind == SHORT {
            out.extend_from_slice(&(value as u16).to_le_bytes());
            out.extend_from_slice(&[0, 0]);
        } else {
            out.extend_from_slice(&value.to_le_bytes());
        }
    }
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(tiff: &[u8], wanted: u16) -> Option<u32> {
        let count = u16::from_le_bytes([tiff[8], tiff[9]]) as usize;
        (0..count).find_map(|i| {
            let e = &tiff[10 + i * 12..22 + i * 12];
            let t = u16::from_le_bytes([e[0], e[1]]);
            let kind = u16::from_le_bytes([e[2], e[3]]);
            let v = if kind == 3 {
                u16::from_le_bytes([e[8], e[9]]) as u32
            } else {
                u32::from_le_bytes([e[8], e[9], e[10], e[11]])
            };
            (t == wanted).then_some(v)
        })
    }

    #[test]
    fn ccitt_group4_tiff_layout() {
        let tiff = ccitt_tiff(b"faxdata", 1728, 2200, -1, false, false);
        assert!(tiff.starts_with(b"II*\0"));
        assert_eq!(tag(&tiff, 256), Some(1728));
        assert_eq!(tag(&tiff, 257), Some(2200));
        assert_eq!(tag(&tiff, 259), Some(4));
        assert_eq!(tag(&tiff, 262), Some(0));
        let offset = tag(&tiff, 273).unwrap() as usize;
        assert_eq!(&tiff[offset..], b"faxdata");
        assert_eq!(tag(&tiff, 279), Some(7));
        let size = imagesize::blob_size(&tiff).unwrap();
        assert_eq!((size.width, size.height), (1728, 2200));
    }

    #[test]
    fn ccitt_group3_options() {
        let tiff = ccitt_tiff(b"x", 8, 8, 1, true, false);
        assert_eq!(tag(&tiff, 259), Some(3));
        assert_eq!(tag(&tiff, 292), Some(1));
        assert_eq!(tag(&tiff, 262), Some(1));
        let tiff = ccitt_tiff(b"x", 8, 8, 0, false, true);
        assert_eq!(tag(&tiff, 292), Some(4));
    }
}
