//! trajkit-formats: detect which harness wrote a file and read its records, one at a
//! time, into canonical trajectories or rejections that name file, line and field.
//!
//! One module per source family (`atif`, `gym`, ...), each a [`reader::Reader`].

pub mod adp;
pub mod atif;
pub mod bfcl;
pub mod canonical;
pub mod chat;
pub mod claude_code;
pub mod cline;
pub mod codex;
pub mod copilot;
pub mod error;
pub mod gemini_cli;
pub mod gym;
pub mod harbor_traces;
pub mod harbor_trial;
mod identity;
pub mod input;
pub mod inspect;
pub mod json;
pub mod langfuse;
pub mod langsmith;
pub mod links;
pub mod mapping;
pub mod mini_swe_agent;
pub mod mlflow;
pub mod nebius;
pub mod opencode;
pub mod openhands;
pub mod otel;
pub mod outcomes;
pub mod parquet;
pub mod paths;
pub mod pipeline;
pub mod reader;
pub mod registry;
pub mod rejection;
pub mod report;
mod responses;
pub mod skeleton;
pub mod swe;
pub mod swe_agent;
pub mod swe_gym;
pub mod swe_smith;
pub mod tau2;
pub mod tau_bench;
pub mod token_arrays;
pub mod toolbench;
pub mod traces;
pub mod truncation;

pub use error::FormatError;
pub use input::{discover, InputFile};
pub use paths::{read_paths, read_paths_analyzed, ReadOutcome, ReadRequest};
pub use pipeline::{consumption_edges, read_files, read_inputs, Options, Sink};
pub use rejection::{Problem, Reason, Rejection};
pub use report::FileReport;
