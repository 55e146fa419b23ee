//! One column of the row group being filled: its writer (`parquet`'s, or the export's own for texts and
//! integers) and the pages it wrote.

use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::column::writer::{get_column_writer, ColumnCloseResult, ColumnWriter};
use parquet::errors::ParquetError;
use parquet::file::properties::{EnabledStatistics, WriterPropertiesPtr};
use parquet::schema::types::ColumnDescPtr;

use crate::delta::IntChunk;
use crate::plain::TextChunk;

use crate::pages::{compression, Pages, SharedCodec};

/// How a column chunk is written: integers and times (delta-encoded) by [`IntChunk`], texts by
/// [`TextChunk`], doubles and booleans by `parquet`'s generic column writer.
enum Writer {
    Generic(Box<ColumnWriter<'static>>),
    Text(Box<TextChunk>),
    Int(Box<IntChunk>),
}

/// One column of the row group being filled: its writer and the pages it wrote.
pub(crate) struct Chunk {
    writer: Writer,
    pages: Pages,
}

impl Chunk {
    pub(crate) fn new(
        descr: ColumnDescPtr,
        props: &WriterPropertiesPtr,
        codec: &SharedCodec,
    ) -> Result<Chunk, ParquetError> {
        let pages = Pages::new(codec.clone());
        let writer = if descr.physical_type() == PhysicalType::BYTE_ARRAY {
            let dictionary = props.dictionary_enabled(descr.path());
            Writer::Text(Box::new(TextChunk::new(descr, dictionary)))
        } else if props.encoding(descr.path()) == Some(Encoding::DELTA_BINARY_PACKED) {
            let statistics = props.statistics_enabled(descr.path()) != EnabledStatistics::None;
            Writer::Int(Box::new(IntChunk::new(descr, statistics)))
        } else {
            Writer::Generic(Box::new(get_column_writer(
                descr,
                props.clone(),
                Box::new(pages.clone()),
            )))
        };
        Ok(Chunk { writer, pages })
    }

    /// The generic column writer; an error for a text column (see [`Chunk::text`]).
    pub(crate) fn writer(&mut self) -> Result<&mut ColumnWriter<'static>, ParquetError> {
        match &mut self.writer {
            Writer::Generic(w) => Ok(w),
            Writer::Text(_) | Writer::Int(_) => Err(ParquetError::General(
                "a text or integer column given to the generic writer".into(),
            )),
        }
    }

    /// The writer of an integer column, and where its pages go; `None` for a column the generic
    /// writer writes.
    pub(crate) fn ints(&mut self) -> Option<(&mut IntChunk, &mut Pages)> {
        match &mut self.writer {
            Writer::Int(t) => Some((t, &mut self.pages)),
            _ => None,
        }
    }

    /// The writer of a text column, and where its pages go; an error for another column.
    pub(crate) fn text(&mut self) -> Result<(&mut TextChunk, &mut Pages), ParquetError> {
        match &mut self.writer {
            Writer::Text(t) => Ok((t, &mut self.pages)),
            Writer::Generic(_) | Writer::Int(_) => Err(ParquetError::General(
                "texts given to a column of another type".into(),
            )),
        }
    }

    /// Closes the column chunk: its metadata and its bytes.
    pub(crate) fn close(mut self) -> Result<(ColumnCloseResult, Vec<u8>), ParquetError> {
        let closed = match self.writer {
            Writer::Generic(w) => {
                let mut closed = (*w).close()?;
                // Compressed by `Pages`, not by the writer, which said none.
                closed.metadata = closed
                    .metadata
                    .into_builder()
                    .set_compression(compression())
                    .build()?;
                closed
            }
            Writer::Text(t) => (*t).close(&mut self.pages)?,
            Writer::Int(t) => (*t).close(&mut self.pages)?,
        };
        Ok((closed, self.pages.take()))
    }
}
