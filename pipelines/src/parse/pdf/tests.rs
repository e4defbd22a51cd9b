//! Unit tests of the PDF parser on PDFs built here: text and scanned pages, image filters and
//! budgets, page-tree and reference loops, encryption.

use lopdf::{dictionary, Stream};

use super::*;
use crate::model::SourceKind;

/// A document with the given page content streams (Helvetica as /F1) and extra objects
/// made by `extra` (which may add XObjects to the shared resources).
fn pdf_with(pages: &[&[u8]], xobjects: Dictionary) -> Document {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
    });
    let resources_id = doc.add_object(dictionary! {
        "Font" => dictionary! { "F1" => font_id },
        "XObject" => xobjects,
    });
    let mut kids = Vec::new();
    for content in pages {
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.to_vec()));
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
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! {
        "Type" => "Catalog",
        "Pages" => pages_id,
    });
    doc.trailer.set("Root", catalog_id);
    doc
}

fn save(mut doc: Document) -> Vec<u8> {
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).unwrap();
    bytes
}

const PAGE_ONE: &[u8] = b"BT /F1 12 Tf 72 700 Td [(Hello) -300 (wor) -30 (ld) -400 (again)] TJ \
    0 -14 Td (Second line of text) Tj 0 -40 Td (New paragraph here.) Tj ET";

#[test]
fn text_pages_and_scanned_pages() {
    // Page 2 draws only an 8-bit gray image; page 3 a CCITT one inside a form.
    let gray = Stream::new(
        dictionary! {
            "Type" => "XObject", "Subtype" => "Image", "Width" => 4, "Height" => 2,
            "ColorSpace" => "DeviceGray", "BitsPerComponent" => 8,
        },
        vec![0, 50, 100, 150, 200, 250, 255, 0],
    );
    let mut doc = pdf_with(
        &[PAGE_ONE, b"q 100 0 0 50 0 0 cm /Im1 Do Q", b"/Fm1 Do"],
        dictionary! {},
    );
    let gray_id = doc.add_object(gray);
    let fax_id = doc.add_object(Stream::new(
        dictionary! {
            "Type" => "XObject", "Subtype" => "Image", "Width" => 16, "Height" => 4,
            "BitsPerComponent" => 1, "Filter" => "CCITTFaxDecode",
            "DecodeParms" => dictionary! { "K" => -1, "Columns" => 16, "Rows" => 4 },
        },
        b"G4DATA".to_vec(),
    ));
    let form_id = doc.add_object(Stream::new(
        dictionary! {
            "Type" => "XObject", "Subtype" => "Form",
            "Resources" => dictionary! { "XObject" => dictionary! { "Fax" => fax_id } },
        },
        b"/Fax Do".to_vec(),
    ));
    let resources_id = doc
        .objects
        .iter()
        .find(|(_, o)| {
            o.as_dict()
                .is_ok_and(|d| d.has(b"XObject") && d.has(b"Font"))
        })
        .map(|(id, _)| *id)
        .unwrap();
    let res = doc.get_dictionary_mut(resources_id).unwrap();
    res.set(
        "XObject",
        dictionary! { "Im1" => gray_id, "Fm1" => form_id },
    );
    let bytes = save(doc);
    let parsed = crate::parse::parse(SourceKind::Pdf, &bytes, &ParseLimits::default()).unwrap();
    // Kept or not, every image is found at the same index; only the kept keep their bytes.
    for (keep, kept) in [
        (Keep::Only(0..0), [false, false]),
        (Keep::Only(1..2), [false, true]),
        (Keep::All, [true, true]),
    ] {
        let some =
            crate::parse::parse_keeping(SourceKind::Pdf, &bytes, &ParseLimits::default(), &keep)
                .unwrap();
        assert_eq!(some.sections, parsed.sections);
        assert_eq!(some.images.len(), 2, "{keep:?}");
        for (image, (kept, whole)) in some.images.iter().zip(kept.iter().zip(&parsed.images)) {
            assert_eq!((&image.path, image.position), (&whole.path, whole.position));
            assert_eq!(
                image.data,
                if *kept {
                    whole.data.clone()
                } else {
                    Vec::new()
                }
            );
        }
    }
    assert_eq!(parsed.pages, 3);
    assert_eq!(parsed.sections.len(), 1);
    assert_eq!(parsed.sections[0].path, "Page 1");
    assert_eq!(
        parsed.sections[0].text,
        "Hello world again\nSecond line of text\n\nNew paragraph here."
    );
    assert_eq!(parsed.images.len(), 2);
    assert_eq!(parsed.images[0].path, "Page 2");
    assert_eq!(parsed.images[0].position, 1);
    assert_eq!(
        parsed.images[0].data,
        [
            b"P5\n4 2\n255\n".as_slice(),
            &[0, 50, 100, 150, 200, 250, 255, 0]
        ]
        .concat()
    );
    assert_eq!(parsed.images[1].path, "Page 3");
    assert!(parsed.images[1].data.starts_with(b"II*\0"));
    assert!(parsed.images[1].data.ends_with(b"G4DATA"));
}

#[test]
fn flate_predictor_and_one_bit_images() {
    use std::io::Write;
    // PNG "Up" predictor rows, deflated: lopdf must undo it.
    let rows: Vec<u8> = vec![2, 10, 20, 30, 2, 1, 1, 1];
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&rows).unwrap();
    let packed = z.finish().unwrap();
    let rgb = Stream::new(
        dictionary! {
            "Type" => "XObject", "Subtype" => "Image", "Width" => 1, "Height" => 2,
            "ColorSpace" => "DeviceRGB", "BitsPerComponent" => 8, "Filter" => "FlateDecode",
            "DecodeParms" => dictionary! { "Predictor" => 12, "Colors" => 3, "Columns" => 1 },
        },
        packed,
    );
    let mask = Stream::new(
        dictionary! {
            "Type" => "XObject", "Subtype" => "Image", "Width" => 8, "Height" => 1,
            "ColorSpace" => "DeviceGray", "BitsPerComponent" => 1,
        },
        vec![0b1111_0000],
    );
    let mut doc = pdf_with(&[b"/A Do /B Do"], dictionary! {});
    let a = doc.add_object(rgb);
    let b = doc.add_object(mask);
    for (_, obj) in doc.objects.iter_mut() {
        if let Ok(d) = obj.as_dict_mut() {
            if d.has(b"Font") {
                d.set("XObject", dictionary! { "A" => a, "B" => b });
            }
        }
    }
    let parsed = crate::parse::parse(SourceKind::Pdf, &save(doc), &ParseLimits::default()).unwrap();
    assert_eq!(parsed.images.len(), 2);
    assert_eq!(
        parsed.images[0].data,
        [b"P6\n1 2\n255\n".as_slice(), &[10, 20, 30, 11, 21, 31]].concat()
    );
    assert_eq!(
        parsed.images[1].data,
        [b"P4\n8 1\n".as_slice(), &[0b0000_1111]].concat()
    );
}

#[test]
fn oversized_only_image_is_a_limit() {
    let big = Stream::new(
        dictionary! {
            "Type" => "XObject", "Subtype" => "Image", "Width" => 30000, "Height" => 30000,
            "ColorSpace" => "DeviceGray", "BitsPerComponent" => 8, "Filter" => "DCTDecode",
        },
        vec![0xFF, 0xD8, 0xFF],
    );
    let mut doc = pdf_with(&[b"/Big Do"], dictionary! {});
    let id = doc.add_object(big);
    for (_, obj) in doc.objects.iter_mut() {
        if let Ok(d) = obj.as_dict_mut() {
            if d.has(b"Font") {
                d.set("XObject", dictionary! { "Big" => id });
            }
        }
    }
    let err =
        crate::parse::parse(SourceKind::Pdf, &save(doc), &ParseLimits::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the image is 30000x30000 pixels; the limit is 50000000 pixels"
    );
}

#[test]
fn reference_loops_terminate() {
    // A form that draws itself, and a page tree whose node is its own parent.
    let mut doc = pdf_with(
        &[b"BT /F1 12 Tf (Looping form text here, long enough) Tj ET /Me Do"],
        dictionary! {},
    );
    let form_id = doc.new_object_id();
    doc.objects.insert(
        form_id,
        Object::Stream(Stream::new(
            dictionary! {
                "Type" => "XObject", "Subtype" => "Form",
                "Resources" => dictionary! { "XObject" => dictionary! { "Me" => form_id } },
            },
            b"BT /F1 12 Tf 0 -20 Td (inner) Tj ET /Me Do".to_vec(),
        )),
    );
    for (_, obj) in doc.objects.iter_mut() {
        if let Ok(d) = obj.as_dict_mut() {
            if d.has(b"Font") {
                d.set("XObject", dictionary! { "Me" => form_id });
            }
        }
    }
    let parsed = crate::parse::parse(SourceKind::Pdf, &save(doc), &ParseLimits::default()).unwrap();
    let text = &parsed.sections[0].text;
    assert!(
        text.starts_with("Looping form text here, long enough"),
        "{text}"
    );
    // The cycle is cut where the form would draw itself again.
    assert_eq!(text.matches("inner").count(), 1, "{text}");
}

#[test]
fn an_image_bomb_drawn_on_every_page_is_a_limit() {
    // One JPEG whose frame header says 20000x20000 while its dictionary says 100x100,
    // drawn on 2,000 pages: refused by its own header, and looked at once.
    let bytes = crate::fixtures::pdf_image_bomb(2000);
    let err = crate::parse::parse(SourceKind::Pdf, &bytes, &ParseLimits::default()).unwrap_err();
    assert!(matches!(err, ParseError::Limit(_)), "{err}");
    assert_eq!(
        err.to_string(),
        "the image is 20000x20000 pixels; the limit is 50000000 pixels"
    );
}

/// A PDF whose pages draw the image XObjects named in `draws` (one entry per page).
fn pdf_drawing(images: &[(i64, i64, Vec<u8>)], draws: &[&[usize]]) -> Vec<u8> {
    let mut doc = pdf_with(&vec![b"".as_slice(); draws.len()], dictionary! {});
    let ids: Vec<ObjectId> = images
        .iter()
        .map(|(w, h, jpeg)| {
            doc.add_object(Stream::new(
                dictionary! {
                    "Type" => "XObject", "Subtype" => "Image", "Width" => *w,
                    "Height" => *h, "ColorSpace" => "DeviceGray", "BitsPerComponent" => 8,
                    "Filter" => "DCTDecode",
                },
                jpeg.clone(),
            ))
        })
        .collect();
    let mut xobjects = Dictionary::new();
    for (i, id) in ids.iter().enumerate() {
        xobjects.set(format!("Im{i}"), *id);
    }
    for (_, obj) in doc.objects.iter_mut() {
        if let Ok(d) = obj.as_dict_mut() {
            if d.has(b"Font") {
                d.set("XObject", xobjects.clone());
            }
        }
    }
    for ((_, page_id), draw) in doc.get_pages().into_iter().zip(draws) {
        let ops: String = draw.iter().map(|i| format!("/Im{i} Do ")).collect();
        let content_id = doc.get_page_contents(page_id)[0];
        if let Ok(Object::Stream(stream)) = doc.get_object_mut(content_id) {
            stream.set_plain_content(ops.into_bytes());
        }
    }
    save(doc)
}

fn jpeg(width: u16, height: u16) -> Vec<u8> {
    let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x0B, 0x08];
    jpeg.extend_from_slice(&height.to_be_bytes());
    jpeg.extend_from_slice(&width.to_be_bytes());
    jpeg.extend_from_slice(&[0x01, 0x01, 0x11, 0x00, 0xFF, 0xD9]);
    jpeg
}

#[test]
fn an_image_drawn_on_many_pages_is_handed_over_once() {
    let bytes = pdf_drawing(&[(40, 30, jpeg(40, 30))], &[&[0], &[0], &[0, 0]]);
    let parsed = crate::parse::parse(SourceKind::Pdf, &bytes, &ParseLimits::default()).unwrap();
    assert_eq!(parsed.pages, 3);
    assert_eq!(parsed.images.len(), 1);
    assert_eq!(parsed.images[0].path, "Page 1");
}

#[test]
fn images_over_the_document_pixel_budget_are_a_limit() {
    let images: Vec<(i64, i64, Vec<u8>)> = (0..3).map(|_| (5000, 5000, jpeg(5000, 5000))).collect();
    let bytes = pdf_drawing(&images, &[&[0], &[1], &[2]]);
    let limits = ParseLimits {
        max_total_pixels: 60_000_000,
        ..ParseLimits::default()
    };
    let err = crate::parse::parse(SourceKind::Pdf, &bytes, &limits).unwrap_err();
    assert!(matches!(err, ParseError::Limit(_)), "{err}");
    assert_eq!(
        err.to_string(),
        "the pdf's images add up to more than the limit of 60000000 pixels"
    );
    // Under the default budget the same three images are handed over.
    let parsed = crate::parse::parse(SourceKind::Pdf, &bytes, &ParseLimits::default()).unwrap();
    assert_eq!(parsed.images.len(), 3);
    // The byte budget counts the images handed over too.
    let limits = ParseLimits {
        max_unpacked_bytes: 30,
        ..ParseLimits::default()
    };
    let err = crate::parse::parse(SourceKind::Pdf, &bytes, &limits).unwrap_err();
    assert!(matches!(err, ParseError::Limit(_)), "{err}");
    assert!(err.to_string().contains("limit of 30 bytes"), "{err}");
}

#[test]
fn a_jpeg_larger_than_its_dictionary_says_is_measured_by_its_header() {
    // The dictionary says 100x100; the frame header 9000x9000 (81 megapixels).
    let bytes = pdf_drawing(&[(100, 100, jpeg(9000, 9000))], &[&[0]]);
    let err = crate::parse::parse(SourceKind::Pdf, &bytes, &ParseLimits::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the image is 9000x9000 pixels; the limit is 50000000 pixels"
    );
}

#[test]
fn a_page_tree_loop_is_corrupt() {
    let bytes = crate::fixtures::pdf_page_tree_loop();
    let err = crate::parse::parse(SourceKind::Pdf, &bytes, &ParseLimits::default()).unwrap_err();
    assert!(
        matches!(err, ParseError::Corrupt { kind: "pdf", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("loops"), "{err}");
}

#[test]
fn too_many_pages_is_a_limit() {
    let doc = pdf_with(&[PAGE_ONE, PAGE_ONE, PAGE_ONE], dictionary! {});
    let limits = ParseLimits {
        max_pages: 2,
        ..ParseLimits::default()
    };
    let err = crate::parse::parse(SourceKind::Pdf, &save(doc), &limits).unwrap_err();
    assert_eq!(err.to_string(), "the pdf has 3 pages; the limit is 2 pages");
}

fn encrypted(user_password: &str) -> Vec<u8> {
    let mut doc = pdf_with(&[PAGE_ONE], dictionary! {});
    doc.trailer.set(
        "ID",
        vec![
            Object::string_literal(b"0123456789abcdef".to_vec()),
            Object::string_literal(b"0123456789abcdef".to_vec()),
        ],
    );
    let version = lopdf::EncryptionVersion::V2 {
        document: &doc,
        owner_password: "owner",
        user_password,
        key_length: 128,
        permissions: lopdf::Permissions::all(),
    };
    let state = lopdf::EncryptionState::try_from(version).unwrap();
    doc.encrypt(&state).unwrap();
    save(doc)
}

#[test]
fn encrypted_with_a_password_is_encrypted() {
    let err = crate::parse::parse(
        SourceKind::Pdf,
        &encrypted("secret"),
        &ParseLimits::default(),
    )
    .unwrap_err();
    assert!(matches!(err, ParseError::Encrypted), "{err}");
}

#[test]
fn encrypted_with_empty_user_password_reads() {
    let parsed =
        crate::parse::parse(SourceKind::Pdf, &encrypted(""), &ParseLimits::default()).unwrap();
    assert!(parsed.sections[0].text.starts_with("Hello world again"));
}

#[test]
fn tidy_collapses() {
    assert_eq!(tidy("  a   b \n\n\n\n c\n"), "a b\n\nc");
}
