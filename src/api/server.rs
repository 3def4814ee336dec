//! Sockets and threads: one thread polls the listening socket and every connection
//! (non-blocking, `poll(2)`), a small pool of handler threads runs the routes.
//!
//! tiny_http_fork was replaced because it reads the request line and each header into
//! a growing buffer with no bound and no limit on the number of headers, its timeouts
//! bound each read and not the whole request, and it needs a thread per connection
//! (measured: 8 endless-header connections took `serve` from 3.8 MB to 499 MB peak;
//! 256 idle connections cost 148–258 threads and 10–28 MB). Here:
//!
//! * a connection holds at most [`MAX_HEAD`] bytes of input (nothing while idle) and
//!   the one answer being written: head parsing and its bounds are in `http.rs`;
//! * the head must arrive within [`HEAD_TIMEOUT`] of its first byte (else 408), an
//!   idle connection or one whose client stops reading is closed after
//!   [`IDLE_TIMEOUT`] ([`PRESSURE_TIMEOUT`] when many are open);
//! * the poll thread reads the body too (within [`BODY_TIMEOUT`], de-chunked, at
//!   most [`super::MAX_BODY`]), so that only complete requests reach a handler: slow
//!   bodies hold no thread;
//! * requests are handed to at most [`HANDLERS`] threads, of which at most
//!   [`MAX_ACTIVE`] do database work at once ([`super::routes::Context`]); `/health`
//!   has a lane and a thread of its own ([`HEALTH_HANDLERS`]), so that it answers
//!   however busy the others are, and so do the quick requests ([`QUICK_HANDLERS`]:
//!   a listing already rendered for this database state, lookups); a handler gives
//!   the connection back with its answer, which the poll thread writes however
//!   slowly the client reads;
//! * at most [`PER_CLIENT_QUEUED`] requests of one client address wait for a
//!   handler (beyond, 503 with `Retry-After`, once those of its clients that have
//!   gone are dropped), and a request whose client has gone is not rendered
//!   (`answers.rs`): one
//!   client's connect/GET/close flood of distinct listings made a firewall's pull
//!   wait 81 s behind renders nobody would read;
//! * at most [`MAX_CONNECTIONS`] connections (fewer with a low descriptor limit);
//!   at the cap the longest-idle keep-alive connection that has served a request is
//!   closed to make room (never one just accepted), and when none is idle new
//!   clients wait in the listen backlog.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::conn::Conn;
use super::error::ApiError;
use super::http::{self, Head, Out};
use super::poller::Poller;
use super::routes::{self, Context};
use crate::config::Paths;

/// Most connections open at once: each costs one descriptor and, while idle, about
/// 100 bytes. Fewer when the descriptor limit is low, see [`connection_cap`].
pub const MAX_CONNECTIONS: usize = 512;

/// Above this many open connections, new ones get [`PRESSURE_TIMEOUT`] instead of
/// [`IDLE_TIMEOUT`], so that a flood of idle connections frees its slots quickly
/// while ordinary clients keep the longer keep-alive.
pub const PRESSURE_CONNECTIONS: usize = 64;

/// How long a connection may make no progress: an idle keep-alive connection, a
/// client that stops sending its request or stops reading its answer is dropped
/// after this.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// [`IDLE_TIMEOUT`] for connections accepted while more than
/// [`PRESSURE_CONNECTIONS`] are open.
pub const PRESSURE_TIMEOUT: Duration = Duration::from_secs(2);

/// The whole request head must arrive within this of its first byte (else 408).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// A request body must arrive within this of its head (else 408). It is read by
/// the poll thread, so a slow body holds no handler thread.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// Room for request bodies being read at once (1 MiB): each body is given its
/// declared length (a chunked one 64 KiB) before it is read; the others wait, their
/// deadline running, so that bodies cost at most this however many connections
/// send one.
pub const BODY_BUDGET: usize = 1 << 20;

/// After an answer that ends the connection, input is read and discarded for at
/// most this long (until the client closes), so that the client reads the answer
/// instead of a reset caused by unread data.
pub const LINGER: Duration = Duration::from_secs(2);

/// Requests whose handlers do database work at the same time. A router has one to
/// four cores, each `/addresses` request may hold a full listing in memory, and each
/// handler may hold up to five files open (database, WAL, shared memory, config.json,
/// its lock).
pub const MAX_ACTIVE: usize = 4;

/// Handler threads, started when first needed: [`MAX_ACTIVE`] plus a few for the
/// requests that wait for the database or touch only `config.json`.
pub const HANDLERS: usize = MAX_ACTIVE + 4;

/// Threads of the `/health` lane: its own, so that a monitor gets its answer however
/// many listings the other handlers are busy with.
pub const HEALTH_HANDLERS: usize = 1;

/// Threads of the quick lane: listings already rendered for this database state
/// (no database work), and lookups (small renders, which have their own turn).
pub const QUICK_HANDLERS: usize = 2;

/// Requests of one client address waiting for a handler at most (per lane); beyond
/// it, 503 with `Retry-After`, so that one address cannot queue the others out.
pub const PER_CLIENT_QUEUED: usize = 16;

/// Stack of each thread; handlers keep their data on the heap and refuse deeply
/// nested JSON before parsing it (the API tests pass with 64 KiB in a debug build).
pub const STACK_SIZE: usize = 256 * 1024;

/// How long [`ApiServer::stop`] waits for answers being handled or written.
pub(super) const DRAIN: Duration = Duration::from_millis(500);

/// A complete request for a handler thread.
pub(super) struct Job {
    pub(super) slot: usize,
    pub(super) conn: Conn,
    pub(super) head: Head,
    /// The whole body (de-chunked).
    pub(super) body: Vec<u8>,
    /// Only the checks due before `100 Continue`: the body has not been read yet.
    pub(super) check_only: bool,
}

/// A handled request: the connection back, with its answer.
pub(super) struct Done {
    pub(super) slot: usize,
    pub(super) conn: Conn,
    pub(super) out: Out,
    pub(super) keep: bool,
    /// After the checks of a `check_only` job passed: the head, whose body is to be
    /// read now (`out` is empty).
    pub(super) resume: Option<Head>,
}

#[derive(Default)]
struct Queue {
    /// With the client's address, for [`PER_CLIENT_QUEUED`].
    jobs: VecDeque<(Option<IpAddr>, Job)>,
    /// The addresses of the requests being handled, one entry each.
    serving: Vec<Option<IpAddr>>,
    /// Handler threads waiting for a job.
    idle: usize,
    threads: usize,
}

/// A queue of requests and the threads that take them.
struct Lane {
    queue: Mutex<Queue>,
    job_ready: Condvar,
    /// Threads started at most.
    max: usize,
    name: &'static str,
}

impl Lane {
    fn new(max: usize, name: &'static str) -> Lane {
        Lane {
            queue: Mutex::new(Queue::default()),
            job_ready: Condvar::new(),
            max,
            name,
        }
    }
}

/// The lane of `/health`; every other request goes to the general one, or to the
/// quick one.
const HEALTH_LANE: usize = 1;
const QUICK_LANE: usize = 2;

/// State shared by the poll thread and the handlers.
pub(super) struct Shared {
    pub(super) stop: AtomicBool,
    pub(super) ctx: Context,
    /// The address bound, which a `Host` may name.
    listen: SocketAddr,
    /// The general lane, the `/health` lane, the quick lane.
    lanes: [Lane; 3],
    pub(super) done: Mutex<Vec<Done>>,
    /// Written to wake the poll thread (a handler finished, or stop).
    wake: UnixStream,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks, but a poisoned queue is still right.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub(super) fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn wake_poller(&self) {
        // A full pipe already holds a wake-up.
        let _ = (&self.wake).write(&[1]);
    }
}

/// A running API server. Dropping it (or [`ApiServer::stop`]) stops it.
pub struct ApiServer {
    addr: SocketAddr,
    pub(super) shared: Arc<Shared>,
    poller: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer")
            .field("addr", &self.addr)
            .finish()
    }
}

/// A short form of the errors `bind` gives, after the address.
fn describe_bind_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::AddrInUse => "address in use".into(),
        io::ErrorKind::AddrNotAvailable => "address not available on this host".into(),
        io::ErrorKind::PermissionDenied => "permission denied (ports below 1024 need root)".into(),
        _ => e.to_string(),
    }
}

/// The connection cap for the descriptor limit of this process: one descriptor per
/// connection, and 64 kept for everything else (the handlers' files, 5 each at most,
/// the daemon's, logging). With the usual limit of 1024 that is 512.
pub fn connection_cap() -> usize {
    cap_for_limits(std::fs::read_to_string("/proc/self/limits").ok().as_deref())
}

/// [`connection_cap`] for the text of `/proc/self/limits` (`None`: not Linux).
fn cap_for_limits(limits: Option<&str>) -> usize {
    let soft = limits.and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("Max open files"))?;
        line.split_whitespace().nth(3)?.parse::<usize>().ok()
    });
    match soft {
        Some(n) => MAX_CONNECTIONS.min(n.saturating_sub(64)).max(4),
        // "unlimited", or not Linux.
        None => MAX_CONNECTIONS,
    }
}

/// Binds `listen` and serves the API on background threads.
pub fn start(paths: &Paths, listen: SocketAddr) -> Result<ApiServer, String> {
    let err = |e: io::Error| format!("{listen}: {e}");
    let listener =
        TcpListener::bind(listen).map_err(|e| format!("{listen}: {}", describe_bind_error(&e)))?;
    let addr = listener.local_addr().map_err(err)?;
    listener.set_nonblocking(true).map_err(err)?;
    let (wake_rx, wake_tx) = UnixStream::pair().map_err(err)?;
    wake_rx.set_nonblocking(true).map_err(err)?;
    wake_tx.set_nonblocking(true).map_err(err)?;
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        ctx: Context::new(paths.clone(), MAX_ACTIVE),
        listen: addr,
        lanes: [
            Lane::new(HANDLERS, "api-handler"),
            Lane::new(HEALTH_HANDLERS, "api-health"),
            Lane::new(QUICK_HANDLERS, "api-quick"),
        ],
        done: Mutex::new(Vec::new()),
        wake: wake_tx,
    });
    if let Ok(w) = shared.wake.try_clone() {
        shared.ctx.answers.set_waker(w);
    }
    let sh = shared.clone();
    let poller = thread::Builder::new()
        .name("api-poll".into())
        .stack_size(STACK_SIZE)
        .spawn(move || Poller::new(listener, wake_rx, sh).run())
        .map_err(|e| format!("{listen}: cannot start the server thread: {e}"))?;
    Ok(ApiServer {
        addr,
        shared,
        poller: Some(poller),
    })
}

/// The lane of a request: `/health` (any method, any query) has its own, quick
/// ones another (`routes::quick`).
fn lane_of(head: &Head, ctx: &Context) -> usize {
    let (path, _) = super::query::split_target(&head.info.target);
    if path == "/health" {
        HEALTH_LANE
    } else if routes::quick(&head.info, ctx) {
        QUICK_LANE
    } else {
        0
    }
}

/// The connection back without an answer: its client has gone.
fn dropped(job: Job) -> Done {
    Done {
        slot: job.slot,
        conn: job.conn,
        out: Out::default(),
        keep: false,
        resume: None,
    }
}

/// Whether the client of `job` has gone.
fn gone(job: &Job) -> bool {
    super::gone::gone(job.conn.stream.as_raw_fd())
}

/// Room in `q` for one more request from `peer`: at [`PER_CLIENT_QUEUED`], that
/// client's requests whose clients have gone are dropped first (into `out`).
fn room_for(q: &mut Queue, peer: Option<IpAddr>, out: &mut Vec<Done>) -> bool {
    let Some(peer) = peer else { return true };
    let count = |q: &Queue| q.jobs.iter().filter(|(p, _)| *p == Some(peer)).count();
    if count(q) < PER_CLIENT_QUEUED {
        return true;
    }
    let (kept, left): (VecDeque<_>, VecDeque<_>) = std::mem::take(&mut q.jobs)
        .into_iter()
        .partition(|(p, j)| *p != Some(peer) || !gone(j));
    q.jobs = kept;
    out.extend(left.into_iter().map(|(_, j)| dropped(j)));
    count(q) < PER_CLIENT_QUEUED
}

/// Hands `job` to a handler thread of its lane, starting one when none is free and
/// fewer than the lane's maximum run; 503 at once when its client has
/// [`PER_CLIENT_QUEUED`] requests waiting.
pub(super) fn submit(shared: &Arc<Shared>, job: Job) {
    let lane_index = lane_of(&job.head, &shared.ctx);
    let lane = &shared.lanes[lane_index];
    let peer = job.conn.stream.peer_addr().ok().map(|a| a.ip());
    let mut q = lock(&lane.queue);
    let mut out = Vec::new();
    if !room_for(&mut q, peer, &mut out) {
        drop(q);
        let is_head = job.head.info.method == "HEAD";
        let reply = ApiError::Queued(peer.unwrap_or(IpAddr::from([0, 0, 0, 0]))).into();
        out.push(Done {
            slot: job.slot,
            conn: job.conn,
            out: http::answer(reply, is_head, true, crate::util::unix_now()),
            keep: false,
            resume: None,
        });
        return out.into_iter().for_each(|d| finish(shared, d));
    }
    q.jobs.push_back((peer, job));
    if q.jobs.len() > q.idle && q.threads < lane.max {
        let sh = shared.clone();
        let spawned = thread::Builder::new()
            .name(lane.name.into())
            .stack_size(STACK_SIZE)
            .spawn(move || handler_thread(&sh, lane_index));
        match spawned {
            Ok(_) => q.threads += 1,
            Err(e) => {
                log::warn!("api: cannot start a handler thread: {e}");
                if q.threads == 0 {
                    // No thread would ever take it: answer here, blocking the others.
                    let job = q.jobs.pop_back();
                    drop(q);
                    out.into_iter().for_each(|d| finish(shared, d));
                    if let Some((_, job)) = job {
                        finish(shared, handle(job, shared));
                    }
                    return;
                }
            }
        }
    }
    drop(q);
    out.into_iter().for_each(|d| finish(shared, d));
    lane.job_ready.notify_one();
}

fn handler_thread(shared: &Arc<Shared>, lane_index: usize) {
    let lane = &shared.lanes[lane_index];
    // The lanes of their own are bounded by their threads, not by the permits the
    // general lane's requests hold while they wait for their render.
    routes::on_own_lane(lane_index != 0);
    loop {
        let job = {
            let mut q = lock(&lane.queue);
            loop {
                if let Some((peer, job)) = take_fairly(&mut q) {
                    q.serving.push(peer);
                    break (peer, job);
                }
                if shared.stopping() {
                    q.threads -= 1;
                    return;
                }
                q.idle += 1;
                q = lane
                    .job_ready
                    .wait_timeout(q, Duration::from_secs(1))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                q.idle -= 1;
            }
        };
        let (peer, job) = job;
        // Looked at before the job's render (`answers.rs`), not here: a client that
        // shut only its sending side after a cheap request still gets its answer.
        super::answers::set_client(Some(job.conn.stream.as_raw_fd()));
        let done = handle(job, shared);
        super::answers::set_client(None);
        let mut q = lock(&lane.queue);
        if let Some(i) = q.serving.iter().position(|p| *p == peer) {
            q.serving.swap_remove(i);
        }
        drop(q);
        finish(shared, done);
    }
}

/// The next request: the oldest of the address with the fewest requests being
/// handled, so that a client arriving behind another's many requests (a firewall
/// behind a flood) is taken next, not after them.
fn take_fairly(q: &mut Queue) -> Option<(Option<IpAddr>, Job)> {
    let busy = |peer: &Option<IpAddr>| q.serving.iter().filter(|p| *p == peer).count();
    let mut best: Option<(usize, usize)> = None;
    for (i, (peer, _)) in q.jobs.iter().enumerate() {
        let n = busy(peer);
        if best.is_none_or(|(_, m)| n < m) {
            best = Some((i, n));
        }
        if n == 0 {
            break;
        }
    }
    q.jobs.remove(best?.0)
}

fn finish(shared: &Shared, done: Done) {
    lock(&shared.done).push(done);
    shared.wake_poller();
}

/// The start of a request target for the log, escaped (it may hold control bytes).
fn for_log(target: &str) -> String {
    match target.char_indices().nth(200) {
        Some((i, _)) => format!("{:?}...", &target[..i]),
        None => format!("{target:?}"),
    }
}

/// Runs the routes on one complete request, or the checks before its body.
fn handle(job: Job, shared: &Shared) -> Done {
    let started = Instant::now();
    let head = &job.head;
    let host = head.info.host.as_deref();
    let reply = if shared.stopping() {
        ApiError::ShuttingDown.into()
    } else if let Err(e) = super::hosts::check(host, shared.listen, &shared.ctx) {
        // Every route, before anything else: see `hosts.rs`.
        e.into()
    } else if job.check_only {
        match routes::check_before_body(&head.info, &shared.ctx) {
            Ok(()) => {
                return Done {
                    slot: job.slot,
                    conn: job.conn,
                    out: Out::default(),
                    keep: true,
                    resume: Some(job.head),
                }
            }
            Err(e) => e.into(),
        }
    } else {
        routes::answer(&head.info, &job.body, &shared.ctx)
    };
    // A body not read (refused before it) must not be taken for the next request.
    let keep = head.keep_alive && !job.check_only && !shared.stopping();
    log::debug!(
        "api: {} {} -> {} in {} ms",
        head.info.method,
        for_log(&head.info.target),
        reply.status,
        started.elapsed().as_millis()
    );
    let is_head = head.info.method == "HEAD";
    let out = http::answer(reply, is_head, !keep, crate::util::unix_now());
    Done {
        slot: job.slot,
        conn: job.conn,
        out,
        keep,
        resume: None,
    }
}

impl ApiServer {
    /// The address the server listens on (with the port chosen when `:0` was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the server: closes the listening socket and idle connections at once,
    /// answers requests still arriving with 503, and waits briefly for answers being
    /// handled or written.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(poller) = self.poller.take() else {
            return;
        };
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake_poller();
        for lane in &self.shared.lanes {
            lane.job_ready.notify_all();
        }
        let deadline = Instant::now() + DRAIN + Duration::from_millis(500);
        while !poller.is_finished() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(2));
        }
        if poller.is_finished() {
            let _ = poller.join();
        } else {
            log::warn!("api: the server thread did not stop in time");
        }
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests;
