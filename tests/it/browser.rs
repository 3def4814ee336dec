//! Headless Chromium driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: JSON messages ending in a NUL byte, Chromium reading fd
//! 3 and writing fd 4), so the tests need neither a WebSocket client nor node.
//! Every JS exception, `console.error` and browser log error of the page is kept, so
//! that a test can assert there were none.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The Chromium binary: `$CHROMIUM`, else `chromium` or `chromium-browser` on PATH.
pub fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

/// One headless Chromium with one page attached.
pub struct Browser {
    child: Child,
    to: File,
    from: Receiver<Value>,
    next_id: u64,
    session: String,
    /// Errors the page reported (exceptions, console errors, log errors).
    pub errors: Vec<String>,
    profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pipe() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    (fds[0], fds[1])
}

impl Browser {
    /// Starts Chromium (a fresh profile, no network of its own) with a blank page;
    /// `None` when there is no Chromium.
    pub fn start() -> Option<Browser> {
        let bin = chromium()?;
        let profile = tempfile::tempdir().unwrap();
        let (their_in, our_out) = pipe();
        let (our_in, their_out) = pipe();
        let mut cmd = Command::new(bin);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-extensions",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(profile.path().join("stderr.log")).unwrap());
        // SAFETY: only async-signal-safe calls between fork and exec. The ends move to
        // high numbers first, so that dup2 onto 3 and 4 never overwrites the other.
        unsafe {
            cmd.pre_exec(move || {
                let a = libc::fcntl(their_in, libc::F_DUPFD, 100);
                let b = libc::fcntl(their_out, libc::F_DUPFD, 100);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        // SAFETY: these descriptors are ours alone from here on.
        unsafe {
            libc::close(their_in);
            libc::close(their_out);
        }
        let to = unsafe { File::from_raw_fd(our_out) };
        let from_file = unsafe { File::from_raw_fd(our_in) };
        let (tx, from) = channel();
        thread::spawn(move || {
            let mut r = BufReader::new(from_file);
            let mut msg = Vec::new();
            while r.read_until(0, &mut msg).is_ok_and(|n| n > 0) {
                msg.pop();
                if let Ok(v) = serde_json::from_slice::<Value>(&msg) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
                msg.clear();
            }
        });
        let mut b = Browser {
            child,
            to,
            from,
            next_id: 0,
            session: String::new(),
            errors: Vec::new(),
            profile,
        };
        let target = b.call("Target.createTarget", json!({"url": "about:blank"}));
        let target = target["targetId"].as_str().unwrap().to_string();
        let s = b.call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        );
        b.session = s["sessionId"].as_str().unwrap().to_string();
        for domain in ["Runtime.enable", "Log.enable", "Page.enable"] {
            b.call(domain, json!({}));
        }
        Some(b)
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.profile.path().join("stderr.log")).unwrap_or_default()
    }

    /// Keeps what an event says about errors of the page.
    fn note(&mut self, ev: &Value) {
        let p = &ev["params"];
        match ev["method"].as_str().unwrap_or_default() {
            "Runtime.exceptionThrown" => self.errors.push(format!(
                "exception: {}",
                p["exceptionDetails"]["exception"]["description"]
                    .as_str()
                    .or(p["exceptionDetails"]["text"].as_str())
                    .unwrap_or_default()
            )),
            "Runtime.consoleAPICalled" if p["type"] == "error" => {
                self.errors.push(format!("console.error: {}", p["args"]))
            }
            "Log.entryAdded" if p["entry"]["level"] == "error" => self.errors.push(format!(
                "log: {} {}",
                p["entry"]["text"],
                p["entry"]["url"].as_str().unwrap_or_default()
            )),
            _ => {}
        }
    }

    /// Sends a command (to the page's session once attached) and waits for its result.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            msg["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(v) = self.from.recv_timeout(left) else {
                panic!(
                    "no answer from Chromium to {method}; its log:\n{}",
                    self.stderr()
                );
            };
            if v["id"] == id {
                if v.get("error").is_some() {
                    panic!("{method}: {}", v["error"]);
                }
                return v["result"].clone();
            }
            self.note(&v);
        }
    }

    /// Opens `url` and waits until the document has loaded.
    pub fn goto(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": url}));
        assert!(
            self.wait_for(
                "document.readyState === 'complete'",
                Duration::from_secs(20)
            ),
            "{url} did not load"
        );
    }

    /// The value of a JS expression (promises awaited).
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("{expr}: {e}");
        }
        r["result"]["value"].clone()
    }

    /// Evaluates `expr` until it is true or `limit` passes.
    pub fn wait_for(&mut self, expr: &str, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if self.eval(expr) == json!(true) {
                return true;
            }
            thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// Lays the page out `width` CSS pixels wide (`mobile`: as a phone would).
    pub fn viewport(&mut self, width: u32, mobile: bool) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": mobile}),
        );
        thread::sleep(Duration::from_millis(300));
    }

    /// A PNG of the whole page laid out `width` CSS pixels wide.
    pub fn screenshot(&mut self, width: u32, mobile: bool) -> Vec<u8> {
        self.viewport(width, mobile);
        let r = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        base64(r["data"].as_str().unwrap())
    }
}

/// Decodes standard base64 (what the protocol sends binary data as).
fn base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').map(val).collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &v)| acc | u32::from(v) << (18 - 6 * i));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

#[test]
fn base64_decodes() {
    assert_eq!(base64("aGVsbG8="), b"hello");
    assert_eq!(base64("aGk="), b"hi");
    assert_eq!(base64("YWJj"), b"abc");
}
