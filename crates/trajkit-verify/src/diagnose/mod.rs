//! Numeric diagnostics for environments with numerical state (simulators): every value of
//! `.npy`, `.npz` and JSON numeric arrays checked for finiteness, the first non-finite value
//! of each array localized (array, leading index, flat index, NaN / +Inf / -Inf), and summary
//! statistics per array. Files are streamed; memory does not grow with array size.
//! Rules and output: docs/diagnose.md.

pub mod agree;
mod json;
mod npy;

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use serde::Serialize;

/// What a non-finite value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum NonFinite {
    #[serde(rename = "NaN")]
    Nan,
    #[serde(rename = "+Inf")]
    PosInf,
    #[serde(rename = "-Inf")]
    NegInf,
    /// A `null` inside a JSON numeric array (JavaScript writes NaN and Infinity as null).
    #[serde(rename = "null")]
    Null,
}

impl NonFinite {
    pub fn as_str(self) -> &'static str {
        match self {
            NonFinite::Nan => "NaN",
            NonFinite::PosInf => "+Inf",
            NonFinite::NegInf => "-Inf",
            NonFinite::Null => "null",
        }
    }

    fn of(v: f64) -> Option<NonFinite> {
        if v.is_nan() {
            Some(NonFinite::Nan)
        } else if v == f64::INFINITY {
            Some(NonFinite::PosInf)
        } else if v == f64::NEG_INFINITY {
            Some(NonFinite::NegInf)
        } else {
            None
        }
    }
}

/// Where the first non-finite value of an array is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Location {
    pub kind: NonFinite,
    /// Index along the first axis (the step of a time series); absent for a 0-d array.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leading_index: Option<u64>,
    /// Row-major (C order) position among the array's values.
    pub flat_index: u64,
    /// The full index, one entry per axis.
    pub index: Vec<u64>,
    /// Extra words (`overflow: 1e400` for a JSON number too large for a float64).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A minimum or maximum: exact for integer arrays, a float otherwise (always finite).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Extreme {
    Int(i128),
    Float(f64),
    /// A float16 or float32 array's value, shown in its own shortest form.
    Float32(f32),
}

impl std::fmt::Display for Extreme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Extreme::Int(v) => write!(f, "{v}"),
            Extreme::Float(v) => write!(f, "{v}"),
            Extreme::Float32(v) => write!(f, "{v}"),
        }
    }
}

/// Figures of one array.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArrayReport {
    /// `.npy`: the file name; `.npz`: the member name without `.npy`; JSON: a path
    /// (`$.steps[*].u`, `[*]` standing for the indices of an array of objects).
    pub array: String,
    /// numpy type string (`<f8`, `>i2`, `|b1`), or `json`.
    pub dtype: String,
    /// The array's shape (`.npy`, `.npz`); absent for JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    pub count: u64,
    pub finite: u64,
    pub nan: u64,
    pub pos_inf: u64,
    pub neg_inf: u64,
    /// JSON only: `null`s inside numeric arrays.
    #[serde(skip_serializing_if = "is_zero")]
    pub null: u64,
    /// Of the finite values; absent when there is none (never NaN, never null).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<Extreme>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<Extreme>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_non_finite: Option<Location>,
    /// The values themselves, when read with [`read_values`] (never serialized).
    #[serde(skip)]
    pub kept: Option<Kept>,
}

/// An array's values kept for comparison: row-major (C) order for `.npy` (Fortran-order
/// files reordered), document order for JSON with each value's index. JSON `null` is NaN.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Kept {
    pub values: Vec<f64>,
    /// JSON: the index of each value (one entry per array level); `.npy`: `None`, the
    /// index follows from the shape.
    pub indices: Option<Vec<Vec<u64>>>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ArrayReport {
    /// Values that are not finite numbers (NaN, ±Inf, JSON null).
    pub fn non_finite(&self) -> u64 {
        self.nan + self.pos_inf + self.neg_inf + self.null
    }
}

/// Figures of one file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileReport {
    pub file: String,
    pub arrays: Vec<ArrayReport>,
    /// Members of an `.npz` that are not `.npy` arrays, skipped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

impl FileReport {
    /// True when some array holds a non-finite value.
    pub fn has_non_finite(&self) -> bool {
        self.arrays.iter().any(|a| a.non_finite() > 0)
    }
}

/// Why a file (or one array of it) cannot be diagnosed; names the file, array and offset.
#[derive(Debug, thiserror::Error)]
pub enum DiagnoseError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error("{path}: not a .npy, .npz or .json file")]
    UnknownKind { path: String },
}

/// Running figures of one array while its values stream by.
#[derive(Debug, Default)]
struct Stats {
    count: u64,
    finite: u64,
    nan: u64,
    pos_inf: u64,
    neg_inf: u64,
    null: u64,
    int_min: Option<i128>,
    int_max: Option<i128>,
    float_min: Option<f64>,
    float_max: Option<f64>,
    /// Neumaier-compensated sum of the finite values.
    sum: f64,
    compensation: f64,
    /// File position (value order in the file) and kind of the first non-finite value.
    first: Option<(u64, NonFinite, Option<String>)>,
    /// Every value in file order, when kept for comparison.
    kept: Option<Vec<f64>>,
}

impl Stats {
    /// Statistics that also keep every value when `keep` is set.
    fn new(keep: bool) -> Stats {
        Stats { kept: keep.then(Vec::new), ..Stats::default() }
    }

    fn keep(&mut self, v: f64) {
        if let Some(k) = &mut self.kept {
            k.push(v);
        }
    }

    fn float(&mut self, v: f64) {
        self.keep(v);
        let position = self.count;
        self.count += 1;
        match NonFinite::of(v) {
            Some(kind) => self.non_finite(position, kind, None),
            None => {
                self.finite += 1;
                self.float_min = Some(self.float_min.map_or(v, |m| m.min(v)));
                self.float_max = Some(self.float_max.map_or(v, |m| m.max(v)));
                self.add(v);
            }
        }
    }

    fn int(&mut self, v: i128) {
        self.keep(v as f64);
        self.count += 1;
        self.finite += 1;
        self.int_min = Some(self.int_min.map_or(v, |m| m.min(v)));
        self.int_max = Some(self.int_max.map_or(v, |m| m.max(v)));
        self.add(v as f64);
    }

    /// A non-finite value that is not a float NaN/Inf (JSON null, or an overflowing literal).
    fn special(&mut self, kind: NonFinite, detail: Option<String>) {
        self.keep(match kind {
            NonFinite::PosInf => f64::INFINITY,
            NonFinite::NegInf => f64::NEG_INFINITY,
            NonFinite::Nan | NonFinite::Null => f64::NAN,
        });
        let position = self.count;
        self.count += 1;
        self.non_finite(position, kind, detail);
    }

    fn non_finite(&mut self, position: u64, kind: NonFinite, detail: Option<String>) {
        match kind {
            NonFinite::Nan => self.nan += 1,
            NonFinite::PosInf => self.pos_inf += 1,
            NonFinite::NegInf => self.neg_inf += 1,
            NonFinite::Null => self.null += 1,
        }
        if self.first.is_none() {
            self.first = Some((position, kind, detail));
        }
    }

    fn add(&mut self, v: f64) {
        let t = self.sum + v;
        if self.sum.abs() >= v.abs() {
            self.compensation += (self.sum - t) + v;
        } else {
            self.compensation += (v - t) + self.sum;
        }
        self.sum = t;
    }

    fn mean(&self) -> Option<f64> {
        let m = (self.sum + self.compensation) / self.finite as f64;
        (self.finite > 0 && m.is_finite()).then_some(m)
    }

    /// The report, with the first non-finite value located by `locate(position)`.
    fn report(
        mut self,
        array: String,
        dtype: String,
        shape: Option<Vec<u64>>,
        locate: impl Fn(u64) -> Vec<u64>,
    ) -> ArrayReport {
        let narrow = dtype.ends_with("f4") || dtype.ends_with("f2");
        let float = |v: f64| if narrow { Extreme::Float32(v as f32) } else { Extreme::Float(v) };
        let (min, max) = match (self.int_min, self.int_max) {
            (Some(lo), Some(hi)) => (Some(Extreme::Int(lo)), Some(Extreme::Int(hi))),
            _ => (self.float_min.map(float), self.float_max.map(float)),
        };
        let mean = self.mean();
        let kept = self.kept.take().map(|values| Kept { values, indices: None });
        let first_non_finite = self.first.clone().map(|(position, kind, detail)| {
            let index = locate(position);
            let flat_index = match &shape {
                Some(shape) => c_flat(&index, shape),
                None => position,
            };
            Location { kind, leading_index: index.first().copied(), flat_index, index, detail }
        });
        ArrayReport {
            array,
            dtype,
            shape,
            count: self.count,
            finite: self.finite,
            nan: self.nan,
            pos_inf: self.pos_inf,
            neg_inf: self.neg_inf,
            null: self.null,
            min,
            max,
            mean,
            first_non_finite,
            kept,
        }
    }
}

/// Row-major position of `index` in an array of `shape`.
fn c_flat(index: &[u64], shape: &[u64]) -> u64 {
    index.iter().zip(shape).fold(0, |acc, (i, n)| acc * n + i)
}

/// Diagnoses one file by its extension (`.npy`, `.npz`, `.json`, case-insensitive).
pub fn diagnose(path: &Path) -> Result<FileReport, DiagnoseError> {
    read(path, false)
}

/// `diagnose`, keeping every array's values (`ArrayReport::kept`) for comparison: memory
/// grows with the arrays.
pub fn read_values(path: &Path) -> Result<FileReport, DiagnoseError> {
    read(path, true)
}

fn read(path: &Path, keep: bool) -> Result<FileReport, DiagnoseError> {
    let name = path.display().to_string();
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    let io = |source| DiagnoseError::Io { path: name.clone(), source };
    let file = File::open(path).map_err(io)?;
    let label = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (arrays, skipped) = match ext.as_deref() {
        Some("npy") => (vec![npy::read(BufReader::with_capacity(1 << 20, file), &label, &name, keep)?], Vec::new()),
        Some("npz") => npz(file, &name, keep)?,
        Some("json") => (json::read(BufReader::with_capacity(1 << 20, file), &name, keep)?, Vec::new()),
        _ => return Err(DiagnoseError::UnknownKind { path: name }),
    };
    Ok(FileReport { file: name, arrays, skipped })
}

/// Every `.npy` member of a zip archive (stored or deflated), in archive order.
fn npz(file: File, name: &str, keep: bool) -> Result<(Vec<ArrayReport>, Vec<String>), DiagnoseError> {
    let invalid = |e: zip::result::ZipError| DiagnoseError::Invalid { path: name.to_string(), message: e.to_string() };
    let mut archive = zip::ZipArchive::new(BufReader::new(file)).map_err(invalid)?;
    let mut arrays = Vec::new();
    let mut skipped = Vec::new();
    for i in 0..archive.len() {
        let member = archive.by_index(i).map_err(invalid)?;
        let member_name = member.name().to_string();
        match member_name.strip_suffix(".npy") {
            Some(array) if member.is_file() => {
                let array = array.to_string();
                let location = format!("{name}:{member_name}");
                arrays.push(npy::read(BufReader::with_capacity(1 << 20, member), &array, &location, keep)?);
            }
            _ => skipped.push(member_name),
        }
    }
    Ok((arrays, skipped))
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn fill<R: Read>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests;
