//! The `Command` proposer: an external process speaking JSON lines — how a language model (a
//! script that calls an endpoint) joins the search.
//!
//! ndvm writes to the process's standard input, one JSON object a line:
//!
//! - `{"event": "start", "inputs": […], "shared": […], "params": […], "success": "…", "seed": n}`
//!   once, first; in a search with a template, also `"template": "…"` and `"holes": [{"name":
//!   "dx", "vars": ["x", "y"]}, …]` (then each candidate's `src` is a filling, `(holes E1 E2 …)`);
//! - `{"event": "result", "calibration": …, "src": …, "skeleton": …, "params": {…},
//!   "train_loss": …, "held_out_r2": …, "success": …, …}` for every finished calibration (of
//!   every proposer's candidates), in log order, with `"front": true` when it joined the
//!   search's Pareto front ([`crate::front`]): what is already known, for a language model;
//! - `{"event": "propose", "n": k}` when it wants candidates;
//! - `{"event": "stop"}` at the end (then standard input closes).
//!
//! The process answers each `propose` with exactly `k` lines on its standard output, each a
//! candidate in the shared stream format, `{"src": "(* a x)", "params": ["a"]}`, or
//! `{"end": true}` when it has no more to give. Standard error is free for its own messages
//! (the last lines are shown if it fails).
//!
//! ndvm asks for the next answer as soon as it has read one, so the process can think while
//! the engine calibrates. Every request is written after the results that precede it in the
//! log, so a process that reads its input in order and answers deterministically makes the
//! search deterministic too.
//!
//! Failures never hang the search: an answer line that takes longer than `timeout_seconds` stops
//! the process; a process that exits, closes its output or stops reading its input is an error
//! naming it (with its exit status and last standard-error lines); a line that is not a
//! candidate is skipped with a warning, and three answers in a row without a candidate are an
//! error. If the process falls behind reading results (more than [`QUEUE`] waiting), the
//! surplus is dropped and it is told how many with `{"event": "dropped", "results": k}`.

use crate::proposers::{Context, Notes, Proposal, Proposer, ProposerError};
use crate::record::Record;
use serde::Serialize;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Messages waiting for the process to read them, at most.
pub const QUEUE: usize = 16_384;
/// Longest output line read, in bytes; longer lines are skipped.
pub const MAX_LINE: usize = 1 << 20;
/// Standard-error lines kept for error messages.
const STDERR_TAIL: usize = 12;
/// Answers in a row without a candidate before the proposer is given up.
const GARBAGE_ANSWERS: u32 = 3;

/// What the output reader thread sees.
enum Out {
    Line(String),
    TooLong,
    Eof,
}

#[derive(Debug)]
pub struct CommandProposer {
    name: String,
    child: Child,
    input: Option<SyncSender<String>>,
    output: Receiver<Out>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    timeout: Duration,
    batch: usize,
    /// Whether an answer has been asked for and not read yet.
    asked: bool,
    ended: bool,
    line: u64,
    garbage: u32,
    skipped: u64,
    dropped: u64,
}

/// One answer line (other fields, like `skeleton`, are ignored).
#[derive(serde::Deserialize)]
struct Answer {
    #[serde(default)]
    src: Option<String>,
    #[serde(default)]
    params: Vec<String>,
    #[serde(default)]
    end: bool,
}

impl CommandProposer {
    /// Starts `argv` in `base` and says hello.
    pub fn start(
        argv: &[String],
        name: Option<&str>,
        timeout_seconds: f64,
        batch: usize,
        context: &Context,
    ) -> Result<CommandProposer, ProposerError> {
        let program = argv.first().map_or("", String::as_str);
        let name = name.map_or_else(
            || {
                Path::new(program)
                    .file_name()
                    .map_or_else(|| program.to_string(), |s| s.to_string_lossy().into_owned())
            },
            str::to_string,
        );
        let fail = |message: String| ProposerError {
            proposer: name.clone(),
            message,
        };
        let exe = if program.contains('/') {
            context.base.join(program)
        } else {
            program.into()
        };
        let mut command = Command::new(&exe);
        // Its own process group: what it forks is ended with it (and a Ctrl-C at the terminal
        // goes to ndvm, which stops it in order).
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .args(&argv[1..])
            .current_dir(if context.base.as_os_str().is_empty() {
                Path::new(".")
            } else {
                &context.base
            })
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| fail(format!("cannot start `{}`: {e}", argv.join(" "))))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            return Err(fail("could not connect to its standard streams".into()));
        };
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        spawn_stderr_reader(stderr, tail.clone());
        let mut p = CommandProposer {
            name: name.clone(),
            child,
            input: Some(spawn_writer(stdin)),
            output: spawn_reader(stdout),
            stderr: tail,
            timeout: Duration::from_secs_f64(timeout_seconds.clamp(1e-3, 1e6)),
            batch,
            asked: false,
            ended: false,
            line: 0,
            garbage: 0,
            skipped: 0,
            dropped: 0,
        };
        #[derive(Serialize)]
        struct Start<'a> {
            event: &'static str,
            inputs: &'a [String],
            shared: &'a [String],
            params: &'a [String],
            success: &'a str,
            seed: u64,
            #[serde(skip_serializing_if = "Option::is_none")]
            template: Option<&'a str>,
            #[serde(skip_serializing_if = "Vec::is_empty")]
            holes: Vec<HoleInfo<'a>>,
        }
        #[derive(Serialize)]
        struct HoleInfo<'a> {
            name: &'a str,
            vars: &'a [String],
        }
        let template = context.template.as_deref();
        let hello = Start {
            event: "start",
            inputs: &context.inputs,
            shared: &context.shared,
            params: &context.params,
            success: &context.success,
            seed: context.seed,
            template: template.map(|t| t.text()),
            holes: template.map_or_else(Vec::new, |t| {
                t.holes()
                    .iter()
                    .map(|h| HoleInfo {
                        name: &h.name,
                        vars: &h.vars,
                    })
                    .collect()
            }),
        };
        p.send(json(&hello))?;
        Ok(p)
    }

    fn error(&mut self, message: impl Into<String>) -> ProposerError {
        let mut message = message.into();
        let tail: Vec<String> = self
            .stderr
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default();
        if !tail.is_empty() {
            message += &format!("; its last standard error:\n    {}", tail.join("\n    "));
        }
        ProposerError {
            proposer: self.name.clone(),
            message,
        }
    }

    /// The process's exit status, if it has exited (waiting briefly for it).
    fn exit_status(&mut self) -> String {
        let until = Instant::now() + Duration::from_millis(500);
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) => return format!("exited ({s})"),
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                _ => return "closed its standard output".into(),
            }
        }
    }

    /// Queues one message for the process, waiting up to the timeout for room.
    fn send(&mut self, line: String) -> Result<(), ProposerError> {
        let Some(tx) = self.input.clone() else {
            return Err(self.error("its standard input is closed"));
        };
        let until = Instant::now() + self.timeout;
        let mut line = line;
        loop {
            match tx.try_send(line) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Disconnected(_)) => {
                    let status = self.exit_status();
                    return Err(self.error(format!("stopped reading its input: it {status}")));
                }
                Err(TrySendError::Full(back)) => {
                    if Instant::now() >= until {
                        self.kill();
                        return Err(self.error(format!(
                            "did not read its input for {:.0} s: stopped it",
                            self.timeout.as_secs_f64()
                        )));
                    }
                    line = back;
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        }
    }

    fn ask(&mut self) -> Result<(), ProposerError> {
        let n = self.batch;
        self.send(format!("{{\"event\":\"propose\",\"n\":{n}}}"))?;
        self.asked = true;
        Ok(())
    }

    /// Reads one answer of `batch` lines.
    fn read_answer(&mut self, notes: &mut Notes) -> Result<Vec<Proposal>, ProposerError> {
        let mut got = Vec::new();
        for _ in 0..self.batch {
            let line = match self.output.recv_timeout(self.timeout) {
                Ok(Out::Line(l)) => l,
                Ok(Out::TooLong) => {
                    self.line += 1;
                    self.skip(notes, format!("longer than {} bytes", MAX_LINE));
                    continue;
                }
                Ok(Out::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    let status = self.exit_status();
                    self.input = None;
                    return Err(self.error(format!("it {status} while asked for candidates")));
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.kill();
                    return Err(self.error(format!(
                        "sent no answer within {:.0} s: stopped it",
                        self.timeout.as_secs_f64()
                    )));
                }
            };
            self.line += 1;
            match serde_json::from_str::<Answer>(&line) {
                Ok(Answer { end: true, .. }) => {
                    self.ended = true;
                    break;
                }
                Ok(Answer {
                    src: Some(src),
                    params,
                    ..
                }) => got.push(Proposal {
                    src,
                    params,
                    name: format!("{}:{}", self.name, self.line),
                }),
                Ok(Answer { src: None, .. }) => {
                    self.skip(notes, "a line without `src`".into());
                }
                Err(e) => self.skip(notes, format!("not a candidate ({e})")),
            }
        }
        self.asked = false;
        Ok(got)
    }

    fn skip(&mut self, notes: &mut Notes, why: String) {
        self.skipped += 1;
        if self.skipped <= 10 {
            notes.warn(format!(
                "proposer `{}`, output line {}: skipped: {why}",
                self.name, self.line
            ));
        } else if self.skipped == 11 {
            notes.warn(format!(
                "proposer `{}`: more lines skipped (not all are shown)",
                self.name
            ));
        }
    }

    fn kill(&mut self) {
        self.input = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.end_group();
    }

    /// Ends whatever the process left running in its group (children it forked and did not
    /// wait for): the search owns everything it started.
    fn end_group(&self) {
        #[cfg(unix)]
        if let Some(group) = i32::try_from(self.child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            // The group was made for this proposer (its id is the proposer's pid).
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

impl Proposer for CommandProposer {
    fn name(&self) -> &str {
        &self.name
    }

    fn propose(&mut self, _n: usize, notes: &mut Notes) -> Result<Vec<Proposal>, ProposerError> {
        loop {
            if self.ended && !self.asked {
                return Ok(Vec::new());
            }
            if !self.asked {
                self.ask()?;
            }
            let got = self.read_answer(notes)?;
            if !self.ended {
                // Ask for the next answer now, so the process works while the engine does.
                self.ask()?;
            }
            if !got.is_empty() || self.ended {
                self.garbage = 0;
                return Ok(got);
            }
            self.garbage += 1;
            if self.garbage >= GARBAGE_ANSWERS {
                self.kill();
                return Err(self.error(format!(
                    "sent no valid candidate in {GARBAGE_ANSWERS} answers in a row: stopped it"
                )));
            }
        }
    }

    fn observe(&mut self, done: &[Record], _: &mut Notes) -> Result<(), ProposerError> {
        #[derive(Serialize)]
        struct Result<'a> {
            event: &'static str,
            #[serde(flatten)]
            record: &'a Record,
        }
        let Some(tx) = self.input.clone() else {
            return Ok(());
        };
        for record in done {
            if self.dropped > 0 {
                let note = format!("{{\"event\":\"dropped\",\"results\":{}}}", self.dropped);
                if tx.try_send(note).is_err() {
                    self.dropped += 1;
                    continue;
                }
                self.dropped = 0;
            }
            let line = json(&Result {
                event: "result",
                record,
            });
            match tx.try_send(line) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => self.dropped += 1,
                // It is gone: the next request reports it.
                Err(TrySendError::Disconnected(_)) => return Ok(()),
            }
        }
        Ok(())
    }

    fn finish(&mut self) {
        if let Some(tx) = self.input.take() {
            let _ = tx.try_send("{\"event\":\"stop\"}".into());
        }
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                self.end_group();
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill();
    }
}

impl Drop for CommandProposer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

fn json<T: Serialize>(x: &T) -> String {
    serde_json::to_string(x).unwrap_or_else(|_| "{}".into())
}

/// A thread that writes queued lines to the process; it ends (closing the pipe) when the
/// queue's sender is dropped or a write fails.
fn spawn_writer(stdin: ChildStdin) -> SyncSender<String> {
    let (tx, rx) = mpsc::sync_channel::<String>(QUEUE);
    std::thread::spawn(move || {
        let mut out = std::io::BufWriter::new(stdin);
        let put = |out: &mut std::io::BufWriter<ChildStdin>, line: String| {
            out.write_all(line.as_bytes()).is_ok() && out.write_all(b"\n").is_ok()
        };
        while let Ok(line) = rx.recv() {
            // Write what is queued, then flush: a request is never left in a buffer.
            let mut ok = put(&mut out, line);
            while let (true, Ok(more)) = (ok, rx.try_recv()) {
                ok = put(&mut out, more);
            }
            if !ok || out.flush().is_err() {
                return;
            }
        }
        let _ = out.flush();
    });
    tx
}

/// A thread that reads the process's output lines (each at most [`MAX_LINE`] bytes).
fn spawn_reader(stdout: impl Read + Send + 'static) -> Receiver<Out> {
    let (tx, rx) = mpsc::sync_channel::<Out>(1024);
    std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        loop {
            let mut buf = Vec::new();
            let n = r
                .by_ref()
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut buf)
                .unwrap_or_default();
            if n == 0 {
                let _ = tx.send(Out::Eof);
                return;
            }
            let msg = if buf.len() > MAX_LINE && buf.last() != Some(&b'\n') {
                // Discard the rest of the line.
                loop {
                    let (done, used) = match r.fill_buf() {
                        Ok([]) | Err(_) => (true, 0),
                        Ok(b) => match b.iter().position(|&c| c == b'\n') {
                            Some(i) => (true, i + 1),
                            None => (false, b.len()),
                        },
                    };
                    r.consume(used);
                    if done {
                        break;
                    }
                }
                Out::TooLong
            } else {
                Out::Line(String::from_utf8_lossy(&buf).trim_end().to_string())
            };
            if tx.send(msg).is_err() {
                return;
            }
        }
    });
    rx
}

/// A thread that keeps the last lines of the process's standard error.
fn spawn_stderr_reader(stderr: impl Read + Send + 'static, tail: Arc<Mutex<VecDeque<String>>>) {
    std::thread::spawn(move || {
        let mut r = BufReader::new(stderr);
        loop {
            let mut buf = Vec::new();
            match r.by_ref().take(4096).read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = String::from_utf8_lossy(&buf).trim_end().to_string();
            if let Ok(mut t) = tail.lock() {
                if t.len() == STDERR_TAIL {
                    t.pop_front();
                }
                t.push_back(line);
            }
        }
    });
}
