//! PDF to text through `pdf-extract` (fonts, encodings and ToUnicode maps
//! handled), guarded so a malformed file that makes it panic is one skipped
//! document, not a crashed batch.

use super::ContentError;

/// The text of a PDF file's bytes.
pub(super) fn text(bytes: &[u8]) -> Result<String, ContentError> {
    match std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem(bytes)) {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(e)) => Err(ContentError::Pdf(e.to_string())),
        Err(_) => Err(ContentError::PdfPanic),
    }
}
