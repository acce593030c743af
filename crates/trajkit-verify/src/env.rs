//! Client of the environment adapter protocol (docs/environment-protocol.md): an
//! executable that reads one JSON request per line on stdin and answers one JSON line on
//! stdout. Every `EnvProcess` is a fresh process, killed if it is dropped unclosed.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

/// Bytes of the environment's stderr kept for error messages.
const STDERR_TAIL: usize = 4096;

/// How to start an environment: a shell command line (run with `sh -c`).
#[derive(Debug, Clone)]
pub struct EnvSpec {
    pub command: String,
    /// How long one request may take before the environment is killed.
    pub timeout: Duration,
}

impl EnvSpec {
    pub fn new(command: impl Into<String>) -> EnvSpec {
        EnvSpec { command: command.into(), timeout: Duration::from_secs(60) }
    }
}

/// An action sent with `step`: a tool call's name and arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Action {
    pub name: String,
    pub arguments: Value,
}

/// The answer to `step`.
#[derive(Debug, Clone, PartialEq)]
pub struct StepReply {
    pub observation: Value,
    /// The environment's own state token (any JSON; `null` when it reports none).
    pub state: Value,
}

#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("environment `{command}`: cannot start: {error}")]
    Spawn { command: String, error: std::io::Error },
    #[error("environment `{command}`: {request}: {error}")]
    Io { command: String, request: String, error: std::io::Error },
    #[error("environment `{command}`: no answer to {request} within {seconds} s (killed)")]
    Timeout { command: String, request: String, seconds: u64 },
    #[error("environment `{command}`: exited before answering {request}{stderr}")]
    Exited { command: String, request: String, stderr: String },
    #[error("environment `{command}`: {request}: bad answer: {message}")]
    Protocol { command: String, request: String, message: String },
    #[error("environment `{command}`: {request}: the environment reports an error: {message}")]
    Refused { command: String, request: String, message: String },
}

/// A running environment process.
pub struct EnvProcess {
    spec: EnvSpec,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<std::io::Result<String>>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl EnvProcess {
    /// Starts a fresh process for `spec`.
    pub fn spawn(spec: &EnvSpec) -> Result<EnvProcess, EnvError> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&spec.command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| EnvError::Spawn { command: spec.command.clone(), error })?;
        let stdin = child.stdin.take();
        let (tx, lines) = channel();
        if let Some(out) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut err) = child.stderr.take() {
            let tail = Arc::clone(&stderr);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut t) = tail.lock() {
                        t.extend_from_slice(&buf[..n]);
                        let excess = t.len().saturating_sub(STDERR_TAIL);
                        t.drain(..excess);
                    }
                }
            });
        }
        Ok(EnvProcess { spec: spec.clone(), child, stdin, lines, stderr })
    }

    /// `reset {seed}` -> the environment's state token.
    pub fn reset(&mut self, seed: u64) -> Result<Value, EnvError> {
        let reply = self.request("reset", &json!({"cmd": "reset", "seed": seed}))?;
        Ok(reply.get("state").cloned().unwrap_or(Value::Null))
    }

    /// `step {action}` -> observation and state token.
    pub fn step(&mut self, action: &Action, label: &str) -> Result<StepReply, EnvError> {
        let reply = self.request(label, &json!({"cmd": "step", "action": action}))?;
        let Some(observation) = reply.get("observation").cloned() else {
            return Err(self.protocol(label, "no \"observation\" field"));
        };
        Ok(StepReply { observation, state: reply.get("state").cloned().unwrap_or(Value::Null) })
    }

    /// `capture` -> paths of the databases that hold the environment's state.
    pub fn capture(&mut self) -> Result<Vec<PathBuf>, EnvError> {
        let reply = self.request("capture", &json!({"cmd": "capture"}))?;
        let paths = reply
            .get("databases")
            .and_then(Value::as_array)
            .ok_or_else(|| self.protocol("capture", "no \"databases\" array"))?;
        let mut out = Vec::with_capacity(paths.len());
        for p in paths {
            let s = p.as_str().ok_or_else(|| self.protocol("capture", "a database path is not a string"))?;
            out.push(PathBuf::from(s));
        }
        if out.is_empty() {
            return Err(self.protocol("capture", "no databases"));
        }
        Ok(out)
    }

    /// `close`, then waits for the process to exit (killing it after the timeout).
    pub fn close(mut self) -> Result<(), EnvError> {
        let result = self.request("close", &json!({"cmd": "close"})).map(|_| ());
        self.stdin.take();
        let deadline = std::time::Instant::now() + self.spec.timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
            }
        }
        result
    }

    fn protocol(&self, request: &str, message: &str) -> EnvError {
        EnvError::Protocol { command: self.spec.command.clone(), request: request.into(), message: message.into() }
    }

    fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().map(|t| String::from_utf8_lossy(&t).trim().to_string()).unwrap_or_default();
        if tail.is_empty() {
            String::new()
        } else {
            format!("; its stderr ends with:\n{tail}")
        }
    }

    /// Sends one request line and reads one answer line.
    fn request(&mut self, label: &str, body: &Value) -> Result<Value, EnvError> {
        let command = self.spec.command.clone();
        let mut line = serde_json::to_vec(body).unwrap_or_default();
        line.push(b'\n');
        let sent = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(&line).and_then(|_| stdin.flush()),
            None => Err(std::io::Error::other("stdin closed")),
        };
        if sent.is_err() {
            // A broken pipe means the process is gone; say so with its last words.
            std::thread::sleep(Duration::from_millis(50));
            return Err(EnvError::Exited { command, request: label.into(), stderr: self.stderr_tail() });
        }
        let answer = match self.lines.recv_timeout(self.spec.timeout) {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => return Err(EnvError::Io { command, request: label.into(), error }),
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                return Err(EnvError::Timeout { command, request: label.into(), seconds: self.spec.timeout.as_secs() });
            }
            Err(RecvTimeoutError::Disconnected) => {
                let _ = self.child.wait();
                std::thread::sleep(Duration::from_millis(50));
                return Err(EnvError::Exited { command, request: label.into(), stderr: self.stderr_tail() });
            }
        };
        let value: Value = serde_json::from_str(&answer)
            .map_err(|e| self.protocol(label, &format!("not JSON ({e}): {}", clip(&answer))))?;
        if !value.is_object() {
            return Err(self.protocol(label, &format!("not a JSON object: {}", clip(&answer))));
        }
        if let Some(message) = value.get("error") {
            let message = message.as_str().map(str::to_string).unwrap_or_else(|| message.to_string());
            return Err(EnvError::Refused { command, request: label.into(), message });
        }
        Ok(value)
    }
}

fn clip(s: &str) -> String {
    let mut end = s.len().min(200);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

impl Drop for EnvProcess {
    /// Closes stdin (a well-behaved environment exits on end of input), waits up to a
    /// second, then kills the process it started.
    fn drop(&mut self) {
        self.stdin.take();
        for _ in 0..100 {
            match self.child.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                _ => return,
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
