//! Test support: the example corpus (real files of seven formats, `examples/`) built into a
//! library with `trajkit_library::build`, plus one synthetic hostile source (markup in
//! messages, tool names, call ids and the file name: no real file carries that), a viewer
//! on a free port of 127.0.0.1, and a minimal HTTP client.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};

use trajkit_library::{build, BuildOptions, Quiet};
use trajkit_view::{Server, ViewOptions};

/// Strings of the hostile record; each must be shown as text.
pub const HOSTILE: [&str; 5] = [
    "<script>document.title='pwned'</script>",
    "<img src=x onerror=alert(1)>",
    "<b>evil_tool</b>",
    "\"><iframe id=\"injected\">",
    "</pre><svg onload=alert(2)>",
];

/// The hostile record: an OpenAI-messages row whose id, message, tool name, call id and
/// result carry markup.
fn hostile_line() -> String {
    let args = serde_json::json!({ "cmd": HOSTILE[4] }).to_string();
    serde_json::json!({
        "id": HOSTILE[3],
        "messages": [
            { "role": "user", "content": HOSTILE[0] },
            { "role": "assistant", "content": null, "tool_calls": [
                { "id": HOSTILE[1], "type": "function", "function": { "name": HOSTILE[2], "arguments": args } }
            ]},
            { "role": "tool", "tool_call_id": HOSTILE[1], "content": HOSTILE[4] },
            { "role": "assistant", "content": "done zebraquartz" }
        ]
    })
    .to_string()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

/// `dir/src`: the example corpus and registry, with the hostile source added.
pub fn corpus(dir: &Path) -> PathBuf {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let src = dir.join("src");
    copy_dir(&examples.join("corpus"), &src.join("corpus"));
    let hostile = src.join("corpus/hostile");
    std::fs::create_dir_all(&hostile).expect("mkdir");
    std::fs::write(hostile.join("x<img src=y onerror=alert(3)>.jsonl"), hostile_line() + "\n").expect("hostile");
    let mut registry = std::fs::read_to_string(examples.join("sources.toml")).expect("registry");
    registry.push_str("\n[[source]]\nname = \"hostile <i>source</i>\"\npaths = [\"corpus/hostile\"]\n");
    std::fs::write(src.join("sources.toml"), registry).expect("registry");
    src
}

/// Builds the library `out` from `registry`.
pub fn build_library(registry: &Path, out: &Path) {
    let opts = BuildOptions {
        registry: Some(registry.to_path_buf()),
        output: out.to_path_buf(),
        threads: 1,
        ..BuildOptions::default()
    };
    build(&opts, &Quiet).expect("build");
}

/// A built test library in `dir/lib` and its viewer on a free port (search index ready).
pub fn serve(dir: &Path, opts: ViewOptions) -> (PathBuf, Server) {
    let src = corpus(dir);
    let lib = dir.join("lib");
    build_library(&src.join("sources.toml"), &lib);
    let server = Server::start(&lib, &ViewOptions { port: 0, workers: 2, ..opts }).expect("start");
    server.wait_for_search().expect("search index");
    (lib, server)
}

/// GET `target` (path and query, already encoded): status and body.
pub fn get(addr: SocketAddr, target: &str) -> (u16, String) {
    request(addr, "GET", target)
}

/// One HTTP/1.0 request; the response's status and body.
pub fn request(addr: SocketAddr, method: &str, target: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(s, "{method} {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("send");
    let mut bytes = Vec::new();
    s.read_to_end(&mut bytes).expect("read");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let status = text.get(9..12).and_then(|c| c.parse().ok()).expect("status line");
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

/// The headers of a response to GET `target`.
pub fn headers(addr: SocketAddr, target: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(s, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("send");
    let mut bytes = Vec::new();
    s.read_to_end(&mut bytes).expect("read");
    let text = String::from_utf8_lossy(&bytes).into_owned();
    text.split_once("\r\n\r\n").map(|(h, _)| h.to_string()).unwrap_or_default()
}

/// How a DOM serializer (and our escaping, for `<>&`) writes `s` as text.
pub fn as_text(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
