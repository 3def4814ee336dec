//! Shared test helpers: temporary data directories, the real binary, free ports and a
//! fake HTTP upstream (RIPEstat, DoH) on 127.0.0.1.

#![allow(dead_code)]

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ripe-cidr-collector"))
}

/// A fresh data directory.
pub struct TestDir {
    pub dir: tempfile::TempDir,
}

impl TestDir {
    pub fn new() -> TestDir {
        TestDir {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    pub fn paths(&self) -> ripe_cidr_collector::config::Paths {
        ripe_cidr_collector::config::Paths::new(self.path(), None)
    }
    /// Writes `config.json`.
    pub fn config(&self, json: &serde_json::Value) {
        std::fs::write(
            self.file("config.json"),
            serde_json::to_string_pretty(json).unwrap(),
        )
        .unwrap();
    }
    /// The binary with `--data-dir` set to this directory, environment cleaned.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(bin());
        c.env_remove("RIPE_DATA_DIR")
            .env_remove("RIPE_DB")
            .arg("--data-dir")
            .arg(self.path())
            .stdin(Stdio::null());
        c
    }
    /// Starts the binary with `args` (stderr captured), killed when dropped.
    pub fn spawn(&self, args: &[&str]) -> Proc {
        Proc(
            self.cmd()
                .args(args)
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        )
    }

    /// Runs the binary with `args` to completion.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }
}

/// A child process killed when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Proc {
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
    /// Waits up to `limit` for the process to exit.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if let Some(s) = self.0.try_wait().unwrap() {
                return Some(s);
            }
            thread::sleep(Duration::from_millis(20));
        }
        None
    }
    /// Everything the process wrote to stderr so far (after it exited).
    pub fn stderr(&mut self) -> String {
        let mut s = String::new();
        if let Some(e) = self.0.stderr.as_mut() {
            let _ = e.read_to_string(&mut s);
        }
        s
    }
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something accepts connections on `addr`.
pub fn wait_listening(addr: SocketAddr, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Polls `f` until it is true or `limit` passes.
pub fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        thread::sleep(Duration::from_millis(50));
    }
    f()
}

// The fake HTTP upstream lives in `upstream.rs` (std only, shared with the unit tests).
#[allow(unused_imports)]
pub use crate::upstream::{FakeServer, Reply, Seen};

/// The `resource` query parameter of a RIPEstat request URL (`AS62041` → `62041`).
pub fn resource_of(url: &str) -> Option<String> {
    url.split(['?', '&'])
        .find_map(|kv| kv.strip_prefix("resource="))
        .map(|r| {
            r.trim_start_matches("AS")
                .trim_start_matches("as")
                .to_string()
        })
}

/// A RIPEstat `announced-prefixes` answer holding `prefixes`.
pub fn ripe_body(prefixes: &[String]) -> String {
    let items: Vec<String> = prefixes
        .iter()
        .map(|p| format!(r#"{{"prefix":"{p}","timelines":[{{"starttime":"2026-11-13T08:00:00","endtime":"2026-11-27T08:00:00"}}]}}"#))
        .collect();
    format!(
        r#"{{"messages":[],"status":"ok","status_code":200,"data":{{"prefixes":[{}],"resource":"x"}}}}"#,
        items.join(",")
    )
}
