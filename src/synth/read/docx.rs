//! DOCX to text: the `word/document.xml` part of the ZIP package, one line
//! per paragraph, tabs and breaks kept.

use std::io::Read;

use quick_xml::events::Event;

use super::ContentError;

/// Largest `document.xml` read, so a ZIP bomb cannot exhaust memory.
const MAX_XML: u64 = 256 * 1024 * 1024;

/// The text of a DOCX file's bytes.
pub(super) fn text(bytes: &[u8]) -> Result<String, ContentError> {
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(ContentError::NotZip)?;
    let mut xml = Vec::new();
    archive
        .by_name("word/document.xml")
        .map_err(ContentError::NoDocument)?
        .take(MAX_XML)
        .read_to_end(&mut xml)
        .map_err(|e| ContentError::Xml(e.to_string()))?;
    let mut reader = quick_xml::Reader::from_reader(xml.as_slice());
    let mut out = String::new();
    let mut in_text = false;
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e)) if e.local_name().as_ref() == b"t" => in_text = true,
            Ok(Event::End(e)) => match e.local_name().as_ref() {
                b"t" => in_text = false,
                b"p" => out.push('\n'),
                _ => {}
            },
            Ok(Event::Empty(e)) => match e.local_name().as_ref() {
                b"tab" => out.push('\t'),
                b"br" | b"cr" => out.push('\n'),
                _ => {}
            },
            Ok(Event::Text(t)) if in_text => {
                let text = t.decode().map_err(|e| ContentError::Xml(e.to_string()))?;
                out.push_str(&text);
            }
            Ok(Event::GeneralRef(r)) if in_text => {
                // Entities (`&amp;`, `&#1071;`) arrive as references in quick-xml 0.38+.
                let name = r.decode().map_err(|e| ContentError::Xml(e.to_string()))?;
                let resolved = match name.as_ref() {
                    "amp" => Some('&'),
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "quot" => Some('"'),
                    "apos" => Some('\''),
                    _ => r.resolve_char_ref().ok().flatten(),
                };
                out.extend(resolved);
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => {
                return Err(ContentError::XmlAt {
                    at: reader.error_position(),
                    message: e.to_string(),
                });
            }
        }
        buf.clear();
    }
    Ok(out)
}
