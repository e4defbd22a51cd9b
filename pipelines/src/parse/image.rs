//! Image files (PNG, JPEG, WebP, TIFF) go to OCR whole. Only the header is read here, to check
//! that the image is one of those formats and that its width x height is within
//! [`ParseLimits::max_image_pixels`]; the bytes are passed on unchanged, and nothing decodes
//! them before this check (the decoder allocates the whole image from the header). A JPEG is
//! sized by [`jpeg_frame_size`], which reads markers the way libjpeg does.

use super::{kind_name, ParseError, ParseLimits};
use crate::model::{PageImage, Parsed, SourceKind};

pub(crate) fn parse(
    kind: SourceKind,
    bytes: &[u8],
    limits: &ParseLimits,
) -> Result<Parsed, ParseError> {
    let name = kind_name(kind);
    let format = imagesize::image_type(bytes)
        .map_err(|_| ParseError::corrupt(name, "the image header could not be read"))?;
    if !matches!(
        format,
        imagesize::ImageType::Png
            | imagesize::ImageType::Jpeg
            | imagesize::ImageType::Webp
            | imagesize::ImageType::Tiff
    ) {
        return Err(ParseError::corrupt(
            name,
            "not a png, jpeg, webp or tiff image",
        ));
    }
    let (width, height) = if format == imagesize::ImageType::Jpeg {
        jpeg_frame_size(bytes)
            .ok_or_else(|| ParseError::corrupt(name, "the image header could not be read"))?
    } else {
        let size = imagesize::blob_size(bytes)
            .map_err(|_| ParseError::corrupt(name, "the image header could not be read"))?;
        (size.width as u64, size.height as u64)
    };
    if width == 0 || height == 0 {
        return Err(ParseError::corrupt(name, "the image has no pixels"));
    }
    check_pixels(width, height, limits)?;
    Ok(Parsed {
        sections: Vec::new(),
        images: vec![PageImage {
            path: String::new(),
            position: 0,
            data: bytes.to_vec(),
        }],
        pages: 1,
    })
}

/// The width and height in a JPEG's frame header (its first SOFn marker), found the way libjpeg
/// reads markers: bytes between segments are skipped up to the next `0xFF`, fill bytes and
/// stuffed zeros are skipped, RSTn and TEM have no length, and a second SOI, an EOI or a scan
/// before any frame header is an error (so is a frame of height 0, defined later by DNL). A
/// reader that took the length of a parameterless marker would skip a different stretch of
/// the file and could be shown a small frame while the decoder finds a huge one.
pub(crate) fn jpeg_frame_size(bytes: &[u8]) -> Option<(u64, u64)> {
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    let mut at = 2;
    loop {
        // The next marker: skip to an 0xFF, then past fill bytes; 0xFF 0x00 is no marker.
        at += bytes.get(at..)?.iter().position(|&b| b == 0xFF)?;
        while bytes.get(at) == Some(&0xFF) {
            at += 1;
        }
        let marker = *bytes.get(at)?;
        at += 1;
        match marker {
            0x00 | 0x01 | 0xD0..=0xD7 => continue,
            // SOI again, EOI or a scan before any frame: libjpeg fails.
            0xD8..=0xDA => return None,
            0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF => {
                let frame = bytes.get(at..at + 7)?;
                let height = u16::from_be_bytes([frame[3], frame[4]]) as u64;
                let width = u16::from_be_bytes([frame[5], frame[6]]) as u64;
                return (height > 0).then_some((width, height));
            }
            _ => {
                let length = bytes.get(at..at + 2)?;
                let length = u16::from_be_bytes([length[0], length[1]]) as usize;
                if length < 2 {
                    return None;
                }
                at += length;
            }
        }
    }
}

/// `Limit` when `width x height` is over the cap.
pub(crate) fn check_pixels(
    width: u64,
    height: u64,
    limits: &ParseLimits,
) -> Result<(), ParseError> {
    if width.saturating_mul(height) > limits.max_image_pixels {
        return Err(ParseError::Limit(format!(
            "the image is {width}x{height} pixels; the limit is {} pixels",
            limits.max_image_pixels
        )));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A PNG signature and IHDR chunk for a `width` x `height` 8-bit gray image (the header is
    /// all this parser reads).
    pub(crate) fn png_header(width: u32, height: u32) -> Vec<u8> {
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend_from_slice(&13u32.to_be_bytes());
        png.extend_from_slice(b"IHDR");
        png.extend_from_slice(&width.to_be_bytes());
        png.extend_from_slice(&height.to_be_bytes());
        png.extend_from_slice(&[8, 0, 0, 0, 0]);
        png.extend_from_slice(&[0, 0, 0, 0]); // CRC, unchecked by the header reader
        png
    }

    #[test]
    fn png_is_passed_whole() {
        let png = png_header(3, 2);
        let parsed = parse(SourceKind::Png, &png, &ParseLimits::default()).unwrap();
        assert!(parsed.sections.is_empty());
        assert_eq!(parsed.pages, 1);
        assert_eq!(parsed.images.len(), 1);
        assert_eq!(parsed.images[0].data, png);
        assert_eq!(parsed.images[0].path, "");
        assert_eq!(parsed.images[0].position, 0);
    }

    #[test]
    fn too_many_pixels_is_a_limit() {
        let png = png_header(30_000, 30_000);
        let err = super::super::parse(SourceKind::Png, &png, &ParseLimits::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the image is 30000x30000 pixels; the limit is 50000000 pixels"
        );
        assert!(matches!(err, ParseError::Limit(_)));
    }

    #[test]
    fn image_bombs_are_refused_by_their_header() {
        let err = super::super::parse(
            SourceKind::Png,
            &crate::fixtures::png_bomb(),
            &ParseLimits::default(),
        )
        .unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
        assert_eq!(
            err.to_string(),
            "the image is 100000x100000 pixels; the limit is 50000000 pixels"
        );
        let err = super::super::parse(
            SourceKind::Jpeg,
            &crate::fixtures::jpeg_bomb(),
            &ParseLimits::default(),
        )
        .unwrap_err();
        assert!(matches!(err, ParseError::Limit(_)), "{err}");
        assert_eq!(
            err.to_string(),
            "the image is 65535x65535 pixels; the limit is 50000000 pixels"
        );
    }

    #[test]
    fn jpeg_markers_are_read_as_libjpeg_reads_them() {
        let sof = |w: u16, h: u16| {
            let mut s = vec![0xFF, 0xC0, 0x00, 0x0B, 0x08];
            s.extend_from_slice(&h.to_be_bytes());
            s.extend_from_slice(&w.to_be_bytes());
            s.extend_from_slice(&[0x01, 0x01, 0x11, 0x00]);
            s
        };
        let mut plain = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00];
        plain.extend(sof(640, 480));
        assert_eq!(jpeg_frame_size(&plain), Some((640, 480)));
        // A parameterless RST0 followed by a huge frame: a reader that takes two bytes of
        // length after RST0 skips the huge frame and finds the small one further on.
        let mut trick = vec![0xFF, 0xD8, 0xFF, 0xD0];
        trick.extend(sof(60_000, 60_000));
        trick.extend_from_slice(&[0u8; 65_536]);
        trick.extend(sof(10, 10));
        assert_eq!(jpeg_frame_size(&trick), Some((60_000, 60_000)));
        // Fill bytes and garbage between segments are skipped; a scan before the frame fails.
        let mut fill = vec![0xFF, 0xD8, 0x00, 0x12, 0xFF, 0xFF];
        fill.extend(sof(3, 2));
        assert_eq!(jpeg_frame_size(&fill), Some((3, 2)));
        assert_eq!(jpeg_frame_size(&[0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x02]), None);
        assert_eq!(jpeg_frame_size(&[0xFF, 0xD8, 0xFF, 0xD8]), None);
        assert_eq!(jpeg_frame_size(b"not a jpeg"), None);
    }

    #[test]
    fn unreadable_header_is_corrupt() {
        let err = parse(
            SourceKind::Png,
            b"\x89PNG\r\n\x1a\n",
            &ParseLimits::default(),
        )
        .unwrap_err();
        assert!(
            matches!(err, ParseError::Corrupt { kind: "png", .. }),
            "{err}"
        );
        let err = parse(SourceKind::Jpg, b"not an image", &ParseLimits::default()).unwrap_err();
        assert!(
            matches!(err, ParseError::Corrupt { kind: "jpeg", .. }),
            "{err}"
        );
    }
}
