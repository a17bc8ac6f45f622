//! PDF to text through `pdf-extract` (fonts, encodings and ToUnicode maps
//! handled), guarded so a malformed file that makes it panic is one skipped
//! document, not a crashed batch.

/// The text of a PDF file's bytes.
pub fn text(bytes: &[u8]) -> Result<String, String> {
    match std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem(bytes)) {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(e)) => Err(format!("not a readable PDF: {e}")),
        Err(_) => Err("not a readable PDF: the PDF reader failed on this file".into()),
    }
}
