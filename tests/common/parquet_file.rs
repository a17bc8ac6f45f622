//! Writes small Parquet files for tests with the `parquet` crate's low-level
//! writer: flat columns plus a LIST column, Snappy-compressed as the hub serves them.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

/// One row: a question, an integer answer, a topic and a list of tags.
pub struct ParquetRow<'a> {
    /// `q`.
    pub q: &'a str,
    /// `answer`.
    pub answer: i64,
    /// `topic`.
    pub topic: &'a str,
    /// `tags`.
    pub tags: &'a [&'a str],
}

/// A Snappy-compressing writer of `schema` to a new file at `path`.
fn snappy_writer(path: &Path, schema: parquet::schema::types::Type) -> SerializedFileWriter<File> {
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let file = File::create(path).unwrap();
    SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props)).unwrap()
}

/// Writes `rows` to `path`.
pub fn write(path: &Path, rows: &[ParquetRow]) {
    let schema = parse_message_type(
        "message schema {
            REQUIRED BYTE_ARRAY q (UTF8);
            REQUIRED INT64 answer;
            REQUIRED BYTE_ARRAY topic (UTF8);
            OPTIONAL group tags (LIST) {
                REPEATED group list {
                    OPTIONAL BYTE_ARRAY element (UTF8);
                }
            }
        }",
    )
    .unwrap();
    let mut writer = snappy_writer(path, schema);
    let mut group = writer.next_row_group().unwrap();
    let text = |f: for<'a> fn(&'a ParquetRow<'a>) -> &'a str| -> Vec<ByteArray> {
        rows.iter().map(|r| ByteArray::from(f(r))).collect()
    };
    let mut col = group.next_column().unwrap().unwrap();
    col.typed::<ByteArrayType>()
        .write_batch(&text(|r| r.q), None, None)
        .unwrap();
    col.close().unwrap();
    let mut col = group.next_column().unwrap().unwrap();
    let answers: Vec<i64> = rows.iter().map(|r| r.answer).collect();
    col.typed::<Int64Type>()
        .write_batch(&answers, None, None)
        .unwrap();
    col.close().unwrap();
    let mut col = group.next_column().unwrap().unwrap();
    col.typed::<ByteArrayType>()
        .write_batch(&text(|r| r.topic), None, None)
        .unwrap();
    col.close().unwrap();
    // Levels: definition 3 = a present element; repetition 0 starts a row's list.
    let (mut values, mut defs, mut reps) = (Vec::new(), Vec::new(), Vec::new());
    for row in rows {
        for (i, tag) in row.tags.iter().enumerate() {
            values.push(ByteArray::from(*tag));
            defs.push(3);
            reps.push(i16::from(i > 0));
        }
    }
    let mut col = group.next_column().unwrap().unwrap();
    col.typed::<ByteArrayType>()
        .write_batch(&values, Some(&defs), Some(&reps))
        .unwrap();
    col.close().unwrap();
    group.close().unwrap();
    writer.close().unwrap();
}

/// Writes rows of `text` and a Hugging Face image column, `image` as the
/// `datasets` library stores it: a struct of `bytes` and `path`.
pub fn write_images(path: &Path, rows: &[(&str, &[u8], &str)]) {
    let schema = parse_message_type(
        "message schema {
            REQUIRED BYTE_ARRAY text (UTF8);
            OPTIONAL group image {
                OPTIONAL BYTE_ARRAY bytes;
                OPTIONAL BYTE_ARRAY path (UTF8);
            }
        }",
    )
    .unwrap();
    let mut writer = snappy_writer(path, schema);
    let mut group = writer.next_row_group().unwrap();
    // Definition level 2: the struct and its field are both present.
    let present = vec![2; rows.len()];
    let columns: [(Vec<ByteArray>, Option<&[i16]>); 3] = [
        (rows.iter().map(|r| ByteArray::from(r.0)).collect(), None),
        (
            rows.iter().map(|r| ByteArray::from(r.1.to_vec())).collect(),
            Some(&present),
        ),
        (
            rows.iter().map(|r| ByteArray::from(r.2)).collect(),
            Some(&present),
        ),
    ];
    for (values, defs) in columns {
        let mut col = group.next_column().unwrap().unwrap();
        col.typed::<ByteArrayType>()
            .write_batch(&values, defs, None)
            .unwrap();
        col.close().unwrap();
    }
    group.close().unwrap();
    writer.close().unwrap();
}
