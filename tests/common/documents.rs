//! Documents made by tests: a hand-written one-page PDF, a DOCX built with
//! `zip`, and a folder of every format `harness synth` reads.

use std::io::Write;
use std::path::Path;

/// A one-page PDF whose page shows `text` in Helvetica, with a correct xref table.
pub fn minimal_pdf(text: &str) -> Vec<u8> {
    let content = format!("BT /F1 18 Tf 72 720 Td ({text}) Tj ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_owned(),
        format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_owned(),
    ];
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend(format!("{} 0 obj\n{body}\nendobj\n", i + 1).bytes());
    }
    let xref = pdf.len();
    pdf.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
    for o in offsets {
        pdf.extend(format!("{o:010} 00000 n \n").bytes());
    }
    pdf.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .bytes(),
    );
    pdf
}

/// A DOCX package with one paragraph per item of `paragraphs`.
pub fn minimal_docx(paragraphs: &[&str]) -> Vec<u8> {
    let body: String = paragraphs
        .iter()
        .map(|p| format!("<w:p><w:r><w:t xml:space=\"preserve\">{p}</w:t></w:r></w:p>"))
        .collect();
    let document = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\"><w:body>{body}</w:body></w:document>"
    );
    let types = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\"><Default Extension=\"xml\" ContentType=\"application/xml\"/><Override PartName=\"/word/document.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml\"/></Types>";
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for (name, text) in [
        ("[Content_Types].xml", types),
        ("word/document.xml", &document),
    ] {
        zip.start_file(name, options).unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// Writes the four formats (and a broken PDF) under `dir`.
pub fn write_documents(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("apples.txt"),
        "Apples grow on trees. An apple tree blooms in spring.",
    )
    .unwrap();
    std::fs::write(
        dir.join("bananas.html"),
        "<html><head><script>var x = 'Script';</script><style>p{}</style></head><body><nav>Menu</nav><p>Bananas are berries.</p><p>They grow in the tropics.</p></body></html>",
    )
    .unwrap();
    std::fs::write(
        dir.join("cherries.pdf"),
        minimal_pdf("Cherries ripen in early summer."),
    )
    .unwrap();
    std::fs::write(
        dir.join("dates.docx"),
        minimal_docx(&["Dates grow on palms.", "They are sweet."]),
    )
    .unwrap();
    std::fs::write(dir.join("broken.pdf"), "%PDF-1.4 this is not a real PDF").unwrap();
}
