//! `trajkit view LIB [--port N] [--host 127.0.0.1]`: serves the library viewer
//! (trajkit-view) until interrupted.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use trajkit_view::{Server, ViewOptions};

/// The options of `trajkit view`.
#[derive(clap::Args, Debug)]
pub struct ViewArgs {
    /// Library directory (written by `trajkit build`).
    pub library: std::path::PathBuf,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// Address to bind; the viewer is for this machine unless told otherwise.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Do not build the full-text search index (the `.LIB.trajkit-view.sqlite` sidecar).
    #[arg(long)]
    pub no_search: bool,
    #[command(flatten)]
    pub redaction: super::redaction::RedactArgs,
}

pub fn run(args: &ViewArgs) -> Result<u8> {
    let engine = args.redaction.engine()?;
    let redact = engine.map(|e| {
        Arc::new(move |t: &mut trajkit_model::Trajectory| {
            // A record that cannot be redacted is not shown as it is: its steps are dropped.
            if e.apply(t).is_err() {
                t.steps.clear();
                t.subagents.clear();
            }
        }) as trajkit_view::Redact
    });
    let opts = ViewOptions {
        host: args.host.clone(),
        port: args.port,
        search: !args.no_search,
        redact,
        ..ViewOptions::default()
    };
    let server = Server::start(Path::new(&args.library), &opts)
        .with_context(|| format!("serving {}", args.library.display()))?;
    eprintln!("trajkit view: http://{} (Ctrl-C to stop)", server.addr());
    if !args.no_search {
        eprintln!("search index: {} (built in the background on first use)", server.search_index_path().display());
    }
    server.run();
    Ok(0)
}
