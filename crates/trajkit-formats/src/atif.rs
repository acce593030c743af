//! placeholder
use crate::input::InputFile;
use crate::reader::*;
/// Reader.
pub struct AtifReader;
impl Reader for AtifReader {
    fn name(&self) -> &'static str {
        "atif"
    }
    fn detect(&self, _peek: &Peek) -> Option<Detection> {
        None
    }
    fn read_record(&self, _raw: &RawRecord, _file: &InputFile) -> RecordResult {
        RecordResult::Rejected(vec![])
    }
}
