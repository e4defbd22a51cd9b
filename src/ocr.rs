//! Optical character recognition with Tesseract (leptess), for image files and PDF pages
//! without a text layer. Runs only inside a worker process (`sandbox::worker`): Leptonica
//! decodes the image bytes, which come from users.

/// One Tesseract handle (not thread-safe; the worker is single-threaded).
pub struct Tesseract {
    handle: leptess::LepTess,
}

impl Tesseract {
    /// `data_dir`: the tessdata directory (`None`: Tesseract's default); `language`: e.g.
    /// `eng` or `eng+deu`. Reads the language data, so the worker opens it before it is
    /// confined to its own directory.
    pub fn open(data_dir: Option<&str>, language: &str) -> Result<Self, String> {
        let handle = leptess::LepTess::new(data_dir, language).map_err(|e| {
            format!("ocr is not available (tesseract language data `{language}`: {e}); install tesseract-ocr-{language}")
        })?;
        Ok(Tesseract { handle })
    }

    pub fn recognize(&mut self, image: &[u8]) -> Result<String, String> {
        self.handle
            .set_image_from_mem(image)
            .map_err(|e| format!("the image cannot be read: {e}"))?;
        // Images without a resolution (PNM from PDFs, many PNGs) would make Tesseract guess.
        self.handle.set_fallback_source_resolution(300);
        self.handle
            .get_utf8_text()
            .map_err(|e| format!("ocr produced invalid text: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_image_is_an_error_not_a_crash() {
        let mut ocr = Tesseract::open(None, "eng").unwrap();
        let error = ocr.recognize(b"not an image at all").unwrap_err();
        assert!(error.contains("cannot be read"), "{error}");
        // The handle survives and answers again.
        assert!(ocr.recognize(b"still not an image").is_err());
    }

    #[test]
    fn a_missing_language_says_what_to_install() {
        let error = Tesseract::open(None, "xx-none").err().unwrap();
        assert!(error.contains("tesseract-ocr-xx-none"), "{error}");
    }
}
