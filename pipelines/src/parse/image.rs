//! Image files (PNG, JPEG, WebP, TIFF) go to OCR whole. Only the header is read here, to check
//! that the image is one of those formats and that its width x height is within
//! [`ParseLimits::max_image_pixels`]; the bytes are passed on unchanged.

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
    let size = imagesize::blob_size(bytes)
        .map_err(|_| ParseError::corrupt(name, "the image header could not be read"))?;
    let (width, height) = (size.width as u64, size.height as u64);
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
