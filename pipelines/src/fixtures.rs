//! Small documents of every format, built in code, for tests (feature `fixtures`). A fresh
//! clone's test suite makes its own files from these.

use std::io::{Cursor, Write};

use lopdf::{dictionary, Document, Object, Stream};
use zip::write::SimpleFileOptions;

/// A PDF with one page per entry, each holding its text in Helvetica (a real text layer).
pub fn pdf(pages: &[&str]) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
    });
    let resources_id = doc.add_object(dictionary! {
        "Font" => dictionary! { "F1" => font_id },
    });
    let mut kids = Vec::new();
    for text in pages {
        let escaped = text
            .replace('\\', "\\\\")
            .replace('(', "\\(")
            .replace(')', "\\)");
        let content = format!("BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET");
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.into_bytes()));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
        });
        kids.push(Object::Reference(page_id));
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => kids,
            "Count" => count,
            "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! {
        "Type" => "Catalog",
        "Pages" => pages_id,
    });
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("write the fixture pdf");
    out
}

fn zip_of(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in entries {
        writer.start_file(*name, options).expect("zip entry");
        writer.write_all(bytes).expect("zip write");
    }
    writer.finish().expect("zip finish").into_inner()
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A DOCX with a `Heading1` paragraph, then `paragraphs`.
pub fn docx(heading: &str, paragraphs: &[&str]) -> Vec<u8> {
    let paragraph = |style: Option<&str>, text: &str| {
        let style = style
            .map(|s| format!("<w:pPr><w:pStyle w:val=\"{s}\"/></w:pPr>"))
            .unwrap_or_default();
        format!(
            "<w:p>{style}<w:r><w:t>{}</w:t></w:r></w:p>",
            xml_escape(text)
        )
    };
    let mut body = paragraph(Some("Heading1"), heading);
    for text in paragraphs {
        body.push_str(&paragraph(None, text));
    }
    let document = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\
         <w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\">\
         <w:body>{body}</w:body></w:document>"
    );
    zip_of(&[
        (
            "[Content_Types].xml",
            CONTENT_TYPES_DOCX.as_bytes().to_vec(),
        ),
        ("_rels/.rels", RELS_DOCX.as_bytes().to_vec()),
        ("word/document.xml", document.into_bytes()),
    ])
}

const CONTENT_TYPES_DOCX: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">\
<Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/>\
<Default Extension=\"xml\" ContentType=\"application/xml\"/>\
<Override PartName=\"/word/document.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml\"/>\
</Types>";

const RELS_DOCX: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">\
<Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" Target=\"word/document.xml\"/>\
</Relationships>";

/// An XLSX with one sheet named `sheet` holding `rows` (inline strings; numeric-looking
/// cells as numbers).
pub fn xlsx(sheet: &str, rows: &[&[&str]]) -> Vec<u8> {
    let mut data = String::new();
    for (r, row) in rows.iter().enumerate() {
        data.push_str(&format!("<row r=\"{}\">", r + 1));
        for (c, value) in row.iter().enumerate() {
            let column = (b'A' + c as u8) as char;
            let reference = format!("{column}{}", r + 1);
            if value.parse::<f64>().is_ok() {
                data.push_str(&format!("<c r=\"{reference}\"><v>{value}</v></c>"));
            } else {
                data.push_str(&format!(
                    "<c r=\"{reference}\" t=\"inlineStr\"><is><t>{}</t></is></c>",
                    xml_escape(value)
                ));
            }
        }
        data.push_str("</row>");
    }
    let worksheet = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\
         <worksheet xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\">\
         <sheetData>{data}</sheetData></worksheet>"
    );
    let workbook = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\
         <workbook xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\" \
         xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\">\
         <sheets><sheet name=\"{}\" sheetId=\"1\" r:id=\"rId1\"/></sheets></workbook>",
        xml_escape(sheet)
    );
    zip_of(&[
        (
            "[Content_Types].xml",
            CONTENT_TYPES_XLSX.as_bytes().to_vec(),
        ),
        ("_rels/.rels", RELS_XLSX.as_bytes().to_vec()),
        ("xl/workbook.xml", workbook.into_bytes()),
        (
            "xl/_rels/workbook.xml.rels",
            WORKBOOK_RELS.as_bytes().to_vec(),
        ),
        ("xl/worksheets/sheet1.xml", worksheet.into_bytes()),
    ])
}

const CONTENT_TYPES_XLSX: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">\
<Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/>\
<Default Extension=\"xml\" ContentType=\"application/xml\"/>\
<Override PartName=\"/xl/workbook.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml\"/>\
<Override PartName=\"/xl/worksheets/sheet1.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml\"/>\
</Types>";

const RELS_XLSX: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">\
<Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" Target=\"xl/workbook.xml\"/>\
</Relationships>";

const WORKBOOK_RELS: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\">\
<Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet\" Target=\"worksheets/sheet1.xml\"/>\
</Relationships>";

/// A zip (named like a DOCX or XLSX by the caller) whose `entry` inflates to `bytes` zeros.
pub fn zip_bomb(entry: &str, bytes: usize) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(bytes > u32::MAX as usize);
    writer
        .start_file("[Content_Types].xml", options)
        .expect("zip entry");
    writer
        .write_all(CONTENT_TYPES_DOCX.as_bytes())
        .expect("zip write");
    writer.start_file(entry, options).expect("zip entry");
    let block = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(block.len());
        writer.write_all(&block[..n]).expect("zip write");
        left -= n;
    }
    writer.finish().expect("zip finish").into_inner()
}

/// A PNG of `text` in black on white, rendered by ImageMagick (`/usr/bin/convert`, installed
/// by `scripts/install-system-packages.sh`).
pub fn text_image(text: &str) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!(
        "memvault-fixture-{}-{}",
        std::process::id(),
        text.len()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("text.png");
    let status = std::process::Command::new("/usr/bin/convert")
        .args([
            "-size",
            "1400x200",
            "xc:white",
            "-font",
            "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
            "-pointsize",
            "48",
            "-fill",
            "black",
            "-annotate",
            "+40+120",
            text,
        ])
        .arg(&path)
        .status()
        .expect("ImageMagick's /usr/bin/convert (run scripts/install-system-packages.sh)");
    assert!(status.success(), "convert failed");
    let bytes = std::fs::read(&path).expect("the rendered image");
    let _ = std::fs::remove_dir_all(&dir);
    bytes
}
