//! `healthcheck api | daemon`, black-box: the exit code and the reason a container
//! runtime would see.

use std::net::SocketAddr;
use std::time::Duration;

use ripe_cidr_collector::util;
use serde_json::json;

use crate::common::*;

fn code(out: &std::process::Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[cfg(feature = "api")]
#[test]
fn api_healthy_serve_then_stopped() {
    let t = TestDir::new();
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    // The address comes from config.json when --listen is not given; the server
    // listens on every address, which the check asks on the loopback address.
    t.config(&json!({"api": {"listen": format!("0.0.0.0:{port}")}}));
    let mut server = t.spawn(&["serve"]);
    assert!(wait_listening(addr, Duration::from_secs(10)));
    let out = t.run(&["healthcheck", "api"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("healthy: API at 127.0.0.1:"));
    let out = t.run(&["healthcheck", "api", "--listen", &addr.to_string()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let _ = server.0.kill();
    let _ = server.wait_exit(Duration::from_secs(5));
    let out = t.run(&["healthcheck", "api"]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("unhealthy: API at 127.0.0.1:"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn api_nothing_listening_or_not_our_server() {
    let t = TestDir::new();
    let out = t.run(&[
        "healthcheck",
        "api",
        "--listen",
        &format!("127.0.0.1:{}", free_port()),
    ]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains("unhealthy") && err.contains("connect"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // Something that answers, but not 200 with status ok.
    let fake = FakeServer::start(|_| Reply::json(503, r#"{"status":"error"}"#));
    let out = t.run(&["healthcheck", "api", "--listen", &fake.addr.to_string()]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("503"), "{}", stderr(&out));
    let fake = FakeServer::start(|_| Reply::json(200, r#"{"status":"starting"}"#));
    let out = t.run(&["healthcheck", "api", "--listen", &fake.addr.to_string()]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("starting"), "{}", stderr(&out));
    assert_eq!(fake.requests()[0].url, "/health");
}

#[test]
fn daemon_status_missing_stale_stopped_fresh() {
    let t = TestDir::new();
    let check = |args: &[&str]| {
        let mut a = vec!["healthcheck", "daemon"];
        a.extend_from_slice(args);
        t.run(&a)
    };
    let out = check(&[]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
    let write =
        |v: serde_json::Value| std::fs::write(t.file("status.json"), v.to_string()).unwrap();
    write(json!({"heartbeat": util::iso(util::unix_now() - 600), "pid": 42}));
    let out = check(&[]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("s old (more than 180 s"),
        "{}",
        stderr(&out)
    );
    // A wider limit accepts the same heartbeat.
    assert_eq!(code(&check(&["--max-age", "900"])), 0);
    write(json!({"heartbeat": util::now_iso()}));
    let out = check(&[]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("daemon stopped"), "{}", stderr(&out));
    write(json!({"heartbeat": "yesterday", "pid": 42}));
    assert_eq!(code(&check(&[])), 1);
    std::fs::write(t.file("status.json"), "{").unwrap();
    assert_eq!(code(&check(&[])), 1);
    write(json!({"heartbeat": util::now_iso(), "pid": 42}));
    let out = check(&[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("pid 42"));
}

#[cfg(feature = "collect")]
#[test]
fn daemon_real_heartbeat() {
    let t = TestDir::new();
    t.config(&json!({"asns": [], "fqdns": []}));
    let _daemon = t.spawn(&["daemon"]);
    assert!(eventually(Duration::from_secs(10), || code(
        &t.run(&["healthcheck", "daemon"])
    ) == 0));
}

#[test]
fn usage_errors_exit_2() {
    let t = TestDir::new();
    for args in [
        &["healthcheck"][..],
        &["healthcheck", "web"],
        &["healthcheck", "api", "--max-age", "5"],
        &["healthcheck", "daemon", "--listen", "127.0.0.1:1"],
        &["healthcheck", "daemon", "--max-age", "soon"],
        &["healthcheck", "daemon", "--max-age", "0"],
        &["status", "--max-age", "5"],
    ] {
        assert_eq!(code(&t.run(args)), 2, "{args:?}");
    }
}

/// A broken `config.json` under a running daemon and API: `/health` says
/// `degraded` with the problem named, and both health checks fail (contract, "HTTP
/// API"); fixing the file makes all three healthy again.
#[cfg(all(feature = "api", feature = "collect"))]
#[test]
fn broken_config_is_degraded_and_unhealthy() {
    let t = TestDir::new();
    t.config(&json!({"asns": []}));
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let listen = addr.to_string();
    let _daemon = t.spawn(&["daemon", "--listen", &listen]);
    assert!(wait_listening(addr, Duration::from_secs(10)));
    let api = || t.run(&["healthcheck", "api", "--listen", &listen]);
    assert!(eventually(Duration::from_secs(10), || code(
        &t.run(&["healthcheck", "daemon"])
    ) == 0));
    assert_eq!(code(&api()), 0, "{}", stderr(&api()));
    std::fs::write(t.file("config.json"), "{\"asns\": [").unwrap();
    let (status, body) = http_get(addr, "/health");
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "degraded", "{v}");
    assert!(v["error"].as_str().unwrap().contains("config.json"), "{v}");
    let out = api();
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("degraded"), "{}", stderr(&out));
    let out = t.run(&["healthcheck", "daemon"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("config.json"), "{}", stderr(&out));
    t.config(&json!({"asns": []}));
    assert_eq!(http_get(addr, "/health").0, 200);
    assert!(eventually(Duration::from_secs(5), || code(&api()) == 0));
    assert_eq!(code(&t.run(&["healthcheck", "daemon"])), 0);
}
