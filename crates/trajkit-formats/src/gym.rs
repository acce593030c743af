//! placeholder
use crate::input::InputFile;
use crate::reader::*;
/// Reader.
pub struct GymReader;
impl Reader for GymReader {
    fn name(&self) -> &'static str {
        "gym"
    }
    fn detect(&self, _peek: &Peek) -> Option<Detection> {
        None
    }
    fn read_record(&self, _raw: &RawRecord, _file: &InputFile) -> RecordResult {
        RecordResult::Rejected(vec![])
    }
}
