//! Optical character recognition with Tesseract (leptess), for image files and PDF pages
//! without a text layer.
//!
//! A Tesseract handle is not thread-safe, so one dedicated thread owns it and recognises the
//! images sent to it, one at a time; callers (the pipeline's blocking threads) wait for their
//! answer. The handle is made on first use, so a server without the language data still starts:
//! documents that need OCR then fail with a readable reason.

use std::sync::mpsc;
use std::sync::Mutex;
use std::thread;

use memvault_pipelines::pipeline::Ocr;

type Reply = mpsc::Sender<Result<String, String>>;

/// Tesseract on a thread of its own.
pub struct TesseractOcr {
    jobs: Mutex<mpsc::Sender<(Vec<u8>, Reply)>>,
}

impl TesseractOcr {
    /// `data_dir`: the tessdata directory (`None`: Tesseract's default); `language`: e.g.
    /// `eng` or `eng+deu`.
    pub fn start(data_dir: Option<String>, language: String) -> std::io::Result<Self> {
        // Tesseract's OpenMP threads fight over 2 cores; one thread per recognition is several
        // times faster here. Set before the first handle is made.
        if std::env::var_os("OMP_THREAD_LIMIT").is_none() {
            std::env::set_var("OMP_THREAD_LIMIT", "1");
        }
        let (jobs, queue) = mpsc::channel::<(Vec<u8>, Reply)>();
        thread::Builder::new()
            .name("memvault-ocr".to_string())
            .spawn(move || {
                let mut handle: Option<leptess::LepTess> = None;
                for (image, reply) in queue {
                    let result = recognize(&mut handle, data_dir.as_deref(), &language, &image);
                    let _ = reply.send(result);
                }
            })?;
        Ok(TesseractOcr {
            jobs: Mutex::new(jobs),
        })
    }
}

fn recognize(
    handle: &mut Option<leptess::LepTess>,
    data_dir: Option<&str>,
    language: &str,
    image: &[u8],
) -> Result<String, String> {
    if handle.is_none() {
        let made = leptess::LepTess::new(data_dir, language).map_err(|e| {
            format!("ocr is not available (tesseract language data `{language}`: {e}); install tesseract-ocr-{language}")
        })?;
        *handle = Some(made);
    }
    let Some(tess) = handle.as_mut() else {
        return Err("ocr is not available".to_string());
    };
    tess.set_image_from_mem(image)
        .map_err(|e| format!("the image cannot be read: {e}"))?;
    // Images without a resolution (PNM from PDFs, many PNGs) would make Tesseract guess.
    tess.set_fallback_source_resolution(300);
    let text = tess
        .get_utf8_text()
        .map_err(|e| format!("ocr produced invalid text: {e}"))?;
    Ok(text)
}

impl Ocr for TesseractOcr {
    fn recognize(&self, image: &[u8]) -> Result<String, String> {
        let (reply, answer) = mpsc::channel();
        self.jobs
            .lock()
            .map_err(|_| "ocr is not available".to_string())?
            .send((image.to_vec(), reply))
            .map_err(|_| "ocr is not available (its thread stopped)".to_string())?;
        answer
            .recv()
            .map_err(|_| "ocr is not available (its thread stopped)".to_string())?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_image_is_an_error_not_a_crash() {
        let ocr = TesseractOcr::start(None, "eng".to_string()).unwrap();
        let error = ocr.recognize(b"not an image at all").unwrap_err();
        assert!(
            error.contains("cannot be read") || error.contains("not available"),
            "{error}"
        );
        // The thread survives and answers again.
        assert!(ocr.recognize(b"still not an image").is_err());
    }
}
