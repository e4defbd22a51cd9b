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

// ---------------------------------------------------------------------------------------------
// Legacy .xls (BIFF8 in an OLE compound file).

fn biff(typ: u16, data: &[u8]) -> Vec<u8> {
    let mut out = typ.to_le_bytes().to_vec();
    out.extend_from_slice(&(data.len() as u16).to_le_bytes());
    out.extend_from_slice(data);
    out
}

fn biff_bof(kind: u16) -> Vec<u8> {
    let mut data = 0x0600u16.to_le_bytes().to_vec();
    data.extend_from_slice(&kind.to_le_bytes());
    data.extend_from_slice(&0x0DBBu16.to_le_bytes()); // build
    data.extend_from_slice(&0x07CCu16.to_le_bytes()); // year
    data.extend_from_slice(&0u32.to_le_bytes());
    data.extend_from_slice(&0x0006u32.to_le_bytes());
    biff(0x0809, &data)
}

/// A BIFF8 workbook stream with one worksheet `sheet`: its DIMENSIONS record says
/// `(first row, last row + 1, first column, last column + 1)`, then one LABEL cell per
/// `(row, column, text)`.
pub(crate) fn biff8_workbook(
    sheet: &str,
    dimensions: (u32, u32, u16, u16),
    cells: &[(u16, u16, &str)],
) -> Vec<u8> {
    let mut globals = biff_bof(0x0005);
    globals.extend(biff(0x0042, &1200u16.to_le_bytes())); // CodePage: UTF-16
    let name: Vec<u8> = sheet.bytes().filter(u8::is_ascii).take(31).collect();
    let mut bound = vec![0u8; 4]; // lbPlyPos, patched below
    bound.extend_from_slice(&[0, 0, name.len() as u8, 0]);
    bound.extend_from_slice(&name);
    let bound_at = globals.len() + 4;
    globals.extend(biff(0x0085, &bound));
    globals.extend(biff(0x000A, &[]));

    let mut substream = biff_bof(0x0010);
    let (rf, rl, cf, cl) = dimensions;
    let mut dims = rf.to_le_bytes().to_vec();
    dims.extend_from_slice(&rl.to_le_bytes());
    dims.extend_from_slice(&cf.to_le_bytes());
    dims.extend_from_slice(&cl.to_le_bytes());
    dims.extend_from_slice(&[0, 0]);
    substream.extend(biff(0x0200, &dims));
    for (row, col, text) in cells {
        let units: Vec<u16> = text.encode_utf16().take(8000).collect();
        let mut label = row.to_le_bytes().to_vec();
        label.extend_from_slice(&col.to_le_bytes());
        label.extend_from_slice(&0u16.to_le_bytes()); // XF index
        label.extend_from_slice(&(units.len() as u16).to_le_bytes());
        label.push(1); // two-byte characters
        for unit in units {
            label.extend_from_slice(&unit.to_le_bytes());
        }
        substream.extend(biff(0x0204, &label));
    }
    substream.extend(biff(0x000A, &[]));

    let position = globals.len() as u32;
    globals[bound_at..bound_at + 4].copy_from_slice(&position.to_le_bytes());
    globals.extend(substream);
    globals
}

/// A legacy `.xls` workbook (BIFF8 in an OLE compound file) with one sheet named `sheet`
/// holding `rows` as text cells, its DIMENSIONS record telling the truth.
pub fn xls(sheet: &str, rows: &[&[&str]]) -> Vec<u8> {
    let mut cells = Vec::new();
    let mut width = 0;
    for (r, row) in rows.iter().enumerate() {
        width = width.max(row.len());
        for (c, text) in row.iter().enumerate() {
            cells.push((r as u16, c as u16, *text));
        }
    }
    let dimensions = (0, rows.len() as u32, 0, width as u16);
    crate::parse::ole::single_stream("Workbook", &biff8_workbook(sheet, dimensions, &cells))
}

/// A 5 KB `.xls` whose sheet's DIMENSIONS record claims 4,294,967,295 rows by 65,535
/// columns: a well-formed compound file and BIFF8 workbook that calamine reads as far as the
/// sheet, where it reserves room for that many cells (and the process aborts).
pub fn xls_forged_dimensions() -> Vec<u8> {
    let workbook = biff8_workbook(
        "Forged",
        (0, u32::MAX, 0, u16::MAX),
        &[(0, 0, "forged dimensions")],
    );
    crate::parse::ole::single_stream("Workbook", &workbook)
}

// ---------------------------------------------------------------------------------------------
// ODS.

/// An ODS workbook whose one table is `content` (rows of `table:table-row`).
pub fn ods(table: &str, content: &str) -> Vec<u8> {
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
         <office:document-content xmlns:office=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\" \
         xmlns:table=\"urn:oasis:names:tc:opendocument:xmlns:table:1.0\" \
         xmlns:text=\"urn:oasis:names:tc:opendocument:xmlns:text:1.0\" office:version=\"1.2\">\
         <office:body><office:spreadsheet><table:table table:name=\"{}\">{content}</table:table>\
         </office:spreadsheet></office:body></office:document-content>",
        xml_escape(table)
    );
    zip_of(&[
        (
            "mimetype",
            b"application/vnd.oasis.opendocument.spreadsheet".to_vec(),
        ),
        ("content.xml", xml.into_bytes()),
        (
            "META-INF/manifest.xml",
            b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><manifest:manifest \
              xmlns:manifest=\"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0\"/>"
                .to_vec(),
        ),
    ])
}

/// A 1 KB ODS whose one row (a text cell repeated across all 16,384 columns) is repeated 6,000
/// times: calamine expands it to 98 million cells, each a clone of the text (gigabytes), just
/// under its own cap of 100 million.
pub fn ods_repeated_rows() -> Vec<u8> {
    ods(
        "Repeated",
        "<table:table-row table:number-rows-repeated=\"6000\">\
         <table:table-cell table:number-columns-repeated=\"16384\" office:value-type=\"string\">\
         <text:p>bomb</text:p></table:table-cell></table:table-row>\
         <table:table-row table:number-rows-repeated=\"1042576\"><table:table-cell \
         table:number-columns-repeated=\"16384\"/></table:table-row>",
    )
}

// ---------------------------------------------------------------------------------------------
// Zip bombs.

/// A zip (hand-written, so that the deflate stream can be built by repetition in moments)
/// whose `bomb` entry inflates to `bytes` zeros (a multiple of 1 MiB), after `entries`.
fn zip_with_zeros(entries: &[(&str, &[u8])], bomb: &str, bytes: u64) -> Vec<u8> {
    use flate2::{Compress, Compression, Crc, FlushCompress};
    const MIB: usize = 1 << 20;
    // One MiB of zeros, raw deflate, sync-flushed so that it ends on a byte boundary and can
    // be repeated (its back-references reach only zeros); then an empty final block.
    let mut chunk = Vec::with_capacity(4096);
    let mut deflate = Compress::new(Compression::best(), false);
    deflate
        .compress_vec(&vec![0u8; MIB], &mut chunk, FlushCompress::Sync)
        .expect("deflate");
    let mib_crc = {
        let mut crc = Crc::new();
        crc.update(&vec![0u8; MIB]);
        crc
    };
    let chunks = bytes.div_ceil(MIB as u64);
    let mut data = Vec::with_capacity(chunk.len() * chunks as usize + 2);
    let mut crc = Crc::new();
    for _ in 0..chunks {
        data.extend_from_slice(&chunk);
        crc.combine(&mib_crc);
    }
    data.extend_from_slice(&[0x03, 0x00]);
    let size = chunks * MIB as u64;

    let mut stored: Vec<(String, Vec<u8>, u32, u64, u16)> = entries
        .iter()
        .map(|(name, content)| {
            let mut crc = Crc::new();
            crc.update(content);
            (
                name.to_string(),
                content.to_vec(),
                crc.sum(),
                content.len() as u64,
                0,
            )
        })
        .collect();
    stored.push((bomb.to_string(), data, crc.sum(), size, 8));

    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, content, crc, size, method) in &stored {
        let offset = out.len() as u32;
        let zip64 = *size > u32::MAX as u64;
        let extra = if zip64 {
            let mut e = 0x0001u16.to_le_bytes().to_vec();
            e.extend_from_slice(&16u16.to_le_bytes());
            e.extend_from_slice(&size.to_le_bytes());
            e.extend_from_slice(&(content.len() as u64).to_le_bytes());
            e
        } else {
            Vec::new()
        };
        let (size32, csize32) = if zip64 {
            (u32::MAX, u32::MAX)
        } else {
            (*size as u32, content.len() as u32)
        };
        let header = |signature: u32, central: bool| {
            let mut h = signature.to_le_bytes().to_vec();
            if central {
                h.extend_from_slice(&45u16.to_le_bytes()); // made by
            }
            h.extend_from_slice(&45u16.to_le_bytes()); // needed
            h.extend_from_slice(&0u16.to_le_bytes()); // flags
            h.extend_from_slice(&method.to_le_bytes());
            h.extend_from_slice(&0u32.to_le_bytes()); // time, date
            h.extend_from_slice(&crc.to_le_bytes());
            h.extend_from_slice(&csize32.to_le_bytes());
            h.extend_from_slice(&size32.to_le_bytes());
            h.extend_from_slice(&(name.len() as u16).to_le_bytes());
            h.extend_from_slice(&(extra.len() as u16).to_le_bytes());
            if central {
                h.extend_from_slice(&[0; 6]); // comment length, disk, internal attributes
                h.extend_from_slice(&0u32.to_le_bytes()); // external attributes
                h.extend_from_slice(&offset.to_le_bytes());
            }
            h.extend_from_slice(name.as_bytes());
            h.extend_from_slice(&extra);
            h
        };
        out.extend(header(0x0403_4b50, false));
        out.extend_from_slice(content);
        central.extend(header(0x0201_4b50, true));
    }
    let directory_at = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(stored.len() as u16).to_le_bytes());
    out.extend_from_slice(&(stored.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&directory_at.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// A 1 MB DOCX whose `word/document.xml` inflates to 1 GiB of zeros.
pub fn docx_zip_bomb() -> Vec<u8> {
    zip_with_zeros(
        &[
            ("[Content_Types].xml", CONTENT_TYPES_DOCX.as_bytes()),
            ("_rels/.rels", RELS_DOCX.as_bytes()),
        ],
        "word/document.xml",
        1 << 30,
    )
}

/// A 1 MB XLSX whose `xl/worksheets/sheet1.xml` inflates to 1 GiB of zeros.
pub fn xlsx_zip_bomb() -> Vec<u8> {
    let workbook = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\
         <workbook xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\" \
         xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\">\
         <sheets><sheet name=\"Bomb\" sheetId=\"1\" r:id=\"rId1\"/></sheets></workbook>";
    zip_with_zeros(
        &[
            ("[Content_Types].xml", CONTENT_TYPES_XLSX.as_bytes()),
            ("_rels/.rels", RELS_XLSX.as_bytes()),
            ("xl/workbook.xml", workbook.as_bytes()),
            ("xl/_rels/workbook.xml.rels", WORKBOOK_RELS.as_bytes()),
        ],
        "xl/worksheets/sheet1.xml",
        1 << 30,
    )
}

// ---------------------------------------------------------------------------------------------
// Images.

/// A baseline JPEG's markers around a frame header claiming `width` x `height`, with a
/// token scan: a few hundred bytes whatever the size it claims.
fn jpeg_claiming(width: u16, height: u16) -> Vec<u8> {
    let mut jpeg = vec![0xFF, 0xD8];
    // APP0 JFIF.
    jpeg.extend_from_slice(&[0xFF, 0xE0, 0x00, 0x10]);
    jpeg.extend_from_slice(b"JFIF\0\x01\x01\x00\x00\x01\x00\x01\x00\x00");
    // DQT: one table of ones.
    jpeg.extend_from_slice(&[0xFF, 0xDB, 0x00, 0x43, 0x00]);
    jpeg.extend_from_slice(&[1; 64]);
    // SOF0: 8-bit, one component.
    jpeg.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x0B, 0x08]);
    jpeg.extend_from_slice(&height.to_be_bytes());
    jpeg.extend_from_slice(&width.to_be_bytes());
    jpeg.extend_from_slice(&[0x01, 0x01, 0x11, 0x00]);
    // DHT: DC table 0 and AC table 0 with a single code each.
    jpeg.extend_from_slice(&[0xFF, 0xC4, 0x00, 0x14, 0x00, 0x01]);
    jpeg.extend_from_slice(&[0; 15]);
    jpeg.push(0x00);
    jpeg.extend_from_slice(&[0xFF, 0xC4, 0x00, 0x14, 0x10, 0x01]);
    jpeg.extend_from_slice(&[0; 15]);
    jpeg.push(0x00);
    // SOS and a little entropy-coded data.
    jpeg.extend_from_slice(&[0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3F, 0x00]);
    jpeg.extend_from_slice(&[0x00; 32]);
    jpeg.extend_from_slice(&[0xFF, 0xD9]);
    jpeg
}

/// A JPEG of a few hundred bytes whose frame header claims 65,535 x 65,535 pixels (4.3
/// gigapixels, the most a JPEG can say).
pub fn jpeg_bomb() -> Vec<u8> {
    jpeg_claiming(u16::MAX, u16::MAX)
}

/// A PNG of under 100 bytes whose header claims 100,000 x 100,000 pixels (10 gigapixels).
pub fn png_bomb() -> Vec<u8> {
    use flate2::Crc;
    let chunk = |kind: &[u8; 4], data: &[u8]| {
        let mut out = (data.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        let mut crc = Crc::new();
        crc.update(kind);
        crc.update(data);
        out.extend_from_slice(&crc.sum().to_be_bytes());
        out
    };
    let mut ihdr = 100_000u32.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&100_000u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]); // 8-bit gray
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(chunk(b"IHDR", &ihdr));
    // A zlib stream of a few zero bytes (a real decoder would want 10 GB of them).
    png.extend(chunk(
        b"IDAT",
        &[0x78, 0x9C, 0x63, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01],
    ));
    png.extend(chunk(b"IEND", &[]));
    png
}

// ---------------------------------------------------------------------------------------------
// PDFs.

/// A PDF of `pages` pages, each drawing the same image XObject: a JPEG of a few hundred
/// bytes whose frame header claims 20,000 x 20,000 pixels while the image dictionary says
/// 100 x 100.
pub fn pdf_image_bomb(pages: usize) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let image_id = doc.add_object(Stream::new(
        dictionary! {
            "Type" => "XObject",
            "Subtype" => "Image",
            "Width" => 100,
            "Height" => 100,
            "ColorSpace" => "DeviceGray",
            "BitsPerComponent" => 8,
            "Filter" => "DCTDecode",
        },
        jpeg_claiming(20_000, 20_000),
    ));
    let resources_id = doc.add_object(dictionary! {
        "XObject" => dictionary! { "Im1" => image_id },
    });
    let content_id = doc.add_object(Stream::new(
        dictionary! {},
        b"q 612 0 0 792 0 0 cm /Im1 Do Q".to_vec(),
    ));
    let kids: Vec<Object> = (0..pages)
        .map(|_| {
            Object::Reference(doc.add_object(dictionary! {
                "Type" => "Page",
                "Parent" => pages_id,
                "Contents" => content_id,
            }))
        })
        .collect();
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => kids,
            "Count" => pages as i64,
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

/// A PDF whose page tree loops: the root's child node lists a page and then the root itself
/// among its `/Kids`.
pub fn pdf_page_tree_loop() -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let root_id = doc.new_object_id();
    let inner_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
    });
    let content_id = doc.add_object(Stream::new(
        dictionary! {},
        b"BT /F1 12 Tf 72 720 Td (A page inside a looping page tree.) Tj ET".to_vec(),
    ));
    let page_id = doc.add_object(dictionary! {
        "Type" => "Page",
        "Parent" => inner_id,
        "Contents" => content_id,
    });
    doc.objects.insert(
        inner_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Parent" => root_id,
            "Kids" => vec![Object::Reference(page_id), Object::Reference(root_id)],
            "Count" => 1,
        }),
    );
    doc.objects.insert(
        root_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => vec![Object::Reference(inner_id)],
            "Count" => 1,
            "Resources" => dictionary! { "Font" => dictionary! { "F1" => font_id } },
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! {
        "Type" => "Catalog",
        "Pages" => root_id,
    });
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("write the fixture pdf");
    out
}

// ---------------------------------------------------------------------------------------------
// Text and markup.

/// `n` self-closed `<div/>`s: an HTML parser ignores the slash on a non-void element, so they
/// nest `n` deep.
pub fn nested_html(n: usize) -> Vec<u8> {
    "<div/>".repeat(n).into_bytes()
}

/// `bytes` bytes of words on one line, without a newline (ending in a full stop).
pub fn one_line_text(bytes: usize) -> Vec<u8> {
    const WORDS: &[u8] = b"copper wire ships from porto in coils of fifty metres ";
    let mut text: Vec<u8> = WORDS.iter().copied().cycle().take(bytes).collect();
    if let Some(last) = text.last_mut() {
        *last = b'.';
    }
    text
}
