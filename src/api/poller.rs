//! The poll thread: the listening socket and every connection not with a handler,
//! non-blocking, in one `poll(2)` loop. It reads request heads (at most
//! [`MAX_HEAD`] bytes each) and then their bodies (at most [`MAX_BODY`], de-chunked
//! with the shared decoder), hands only complete requests to the handler pool (so a
//! slow client never holds a handler), writes the answers back however slowly
//! clients read, and enforces the deadlines.

use std::io::{self, Read};
use std::net::{Shutdown, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::conn::Conn;
use super::error::ApiError;
use super::http::{self, Framing, Head, Out, RequestError, MAX_HEAD};
pub(super) use super::incoming::{room_for, Incoming, CONTINUE};
use super::routes::Reply;
use super::server::{
    connection_cap, lock, submit, Done, Job, Shared, BODY_TIMEOUT, DRAIN, HEAD_TIMEOUT,
    IDLE_TIMEOUT, LINGER, PRESSURE_CONNECTIONS, PRESSURE_TIMEOUT,
};
use crate::http1::Chunked;

/// Where a connection is.
pub(super) enum State {
    /// Waiting for a request head; since when its first byte is there.
    Head(Option<Instant>),
    /// Reading the body of a request whose head has arrived.
    Body(Box<Incoming>),
    /// With a handler (the connection is there too).
    Busy,
    /// Writing an answer; then keep the connection?
    Write(Out, bool),
    /// Answered, sending side shut: input is discarded until the client closes or
    /// the time given.
    Linger(Instant),
}

/// What happens when a connection's time is up.
#[derive(Clone, Copy)]
enum Late {
    /// It is closed quietly.
    Close,
    /// It gets this 408 first.
    Answer(fn() -> RequestError),
}

pub(super) struct Slot {
    /// `None` while with a handler.
    conn: Option<Conn>,
    pub(super) state: State,
    /// The last read or write that moved something.
    pub(super) progress: Instant,
    /// A request has been answered on it: a keep-alive connection that has been
    /// used, which may be closed to make room (a fresh one is never).
    pub(super) served: bool,
}

impl Slot {
    /// When the connection times out, and what then.
    fn deadline(&self) -> Option<(Instant, Late)> {
        let idle = self.progress + self.conn.as_ref()?.idle;
        match &self.state {
            State::Head(None) => Some((idle, Late::Close)),
            State::Head(Some(t)) => Some((
                idle.min(*t + HEAD_TIMEOUT),
                Late::Answer(|| RequestError::HeadTimeout),
            )),
            State::Body(b) => Some((
                idle.min(b.deadline),
                Late::Answer(|| RequestError::BodyTimeout),
            )),
            State::Busy => None,
            State::Write(..) => Some((idle, Late::Close)),
            State::Linger(t) => Some((*t, Late::Close)),
        }
    }

    /// May be closed to make room for a new client at the connection cap: idle
    /// between requests after having served one (HTTP lets a server close such a
    /// connection at any time), or [`Slot::slow_head`]. A connection just accepted
    /// looks idle too before its request arrives; closing it would reset a client
    /// that did nothing wrong.
    fn evictable(&self, now: Instant) -> bool {
        self.idle_served() || self.slow_head(now).is_some()
    }

    fn idle_served(&self) -> bool {
        self.served
            && matches!(self.state, State::Head(None))
            && self.conn.as_ref().is_some_and(|c| c.buf.is_empty())
    }

    /// Since when a request head has been arriving (or, on a connection that never
    /// served one, nothing has), when that is longer than [`SLOW_HEAD`]: a client
    /// sends its head at once, a slowloris a byte at a time (600 of them held
    /// `/health` 8.5 s in the backlog, until their 10 s head deadline).
    fn slow_head(&self, now: Instant) -> Option<Instant> {
        let since = match self.state {
            State::Head(Some(t)) => t,
            State::Head(None) if !self.served => self.progress,
            _ => return None,
        };
        (since + SLOW_HEAD <= now).then_some(since)
    }
}

/// How long a head may take to arrive before its connection may be closed to make
/// room at the connection cap.
pub(super) const SLOW_HEAD: Duration = Duration::from_secs(1);

/// The poll thread's state.
pub(super) struct Poller {
    listener: Option<TcpListener>,
    wake: UnixStream,
    pub(super) shared: Arc<Shared>,
    pub(super) slots: Vec<Option<Slot>>,
    pub(super) open: usize,
    cap: usize,
    /// Where discarded input goes.
    scratch: Vec<u8>,
    /// After an `accept` error such as `EMFILE`: not before this again.
    accept_pause: Option<Instant>,
}

fn pollfd(fd: &impl AsRawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    }
}

impl Poller {
    pub(super) fn new(listener: TcpListener, wake: UnixStream, shared: Arc<Shared>) -> Poller {
        Poller {
            listener: Some(listener),
            wake,
            shared,
            slots: Vec::new(),
            open: 0,
            cap: connection_cap(),
            scratch: vec![0; 16 * 1024],
            accept_pause: None,
        }
    }

    pub(super) fn run(mut self) {
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut who: Vec<usize> = Vec::new();
        let mut stopping_since = None;
        loop {
            let now = Instant::now();
            if stopping_since.is_none() && self.shared.stopping() {
                stopping_since = Some(now);
                // The port is free again at once; idle connections go now.
                self.listener = None;
                for i in 0..self.slots.len() {
                    if self.slots[i].as_ref().is_some_and(|s| {
                        matches!(s.state, State::Head(_) | State::Body(_) | State::Linger(_))
                    }) {
                        self.close(i);
                    }
                }
            }
            if let Some(t) = stopping_since {
                if self.open == 0 || now > t + DRAIN {
                    break;
                }
            }
            fds.clear();
            who.clear();
            fds.push(pollfd(&self.wake, libc::POLLIN));
            let mut next = now + Duration::from_secs(1);
            let mut evictable = false;
            for (i, slot) in self.slots.iter().enumerate() {
                let Some(s) = slot else { continue };
                let events = match &s.state {
                    State::Busy => continue,
                    State::Write(..) => libc::POLLOUT,
                    // Waiting for room in the body budget: not read, but its deadline
                    // runs.
                    State::Body(b) if b.admitted.is_none() => {
                        next = next.min(s.deadline().map_or(next, |d| d.0));
                        continue;
                    }
                    State::Body(b) if b.owe > 0 => libc::POLLIN | libc::POLLOUT,
                    _ => libc::POLLIN,
                };
                if let (Some(c), Some((t, _))) = (&s.conn, s.deadline()) {
                    fds.push(pollfd(&c.stream, events));
                    who.push(i);
                    next = next.min(t);
                }
                evictable |= s.evictable(now);
            }
            let paused = self.accept_pause.is_some_and(|t| now < t);
            let listening = match &self.listener {
                Some(l) if !paused && (self.open < self.cap || evictable) => {
                    fds.push(pollfd(l, libc::POLLIN));
                    true
                }
                _ => false,
            };
            let ms = next.saturating_duration_since(now).as_millis() as libc::c_int + 1;
            // SAFETY: `fds` is a valid array of pollfd of the length given.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    log::warn!("api: poll: {e}");
                    thread::sleep(Duration::from_millis(100));
                }
                continue;
            }
            if fds[0].revents != 0 {
                while let Ok(n) = (&self.wake).read(&mut self.scratch) {
                    if n == 0 {
                        break;
                    }
                }
            }
            let done = std::mem::take(&mut *lock(&self.shared.done));
            for d in done {
                self.returned(d);
            }
            for k in 0..who.len() {
                if fds[k + 1].revents != 0 {
                    self.ready(who[k]);
                }
            }
            if listening && fds.last().is_some_and(|p| p.revents != 0) {
                self.accept();
            }
            self.admit_waiting();
            self.expire(Instant::now());
            self.make_room(Instant::now());
        }
        log::debug!("api: server thread stopped");
    }

    pub(super) fn slot(&mut self, i: usize) -> Option<&mut Slot> {
        self.slots.get_mut(i).and_then(Option::as_mut)
    }

    pub(super) fn close(&mut self, i: usize) {
        if self.slots.get_mut(i).and_then(Option::take).is_some() {
            self.open -= 1;
        }
    }

    fn accept(&mut self) {
        for _ in 0..64 {
            if self.open >= self.cap && !self.evict() {
                return;
            }
            let Some(l) = &self.listener else { return };
            match l.accept() {
                Ok((stream, _)) => {
                    let idle = if self.open >= PRESSURE_CONNECTIONS {
                        PRESSURE_TIMEOUT
                    } else {
                        IDLE_TIMEOUT
                    };
                    match Conn::new(stream, idle) {
                        Ok(conn) => self.insert(conn),
                        Err(e) => log::debug!("api: new connection: {e}"),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionAborted
                            | io::ErrorKind::ConnectionReset
                    ) => {}
                Err(e) => {
                    // EMFILE, ENOBUFS and the like: wait and try again rather than stop.
                    log::warn!("api: accept: {e}");
                    self.accept_pause = Some(Instant::now() + Duration::from_millis(100));
                    return;
                }
            }
        }
    }

    /// Closes the longest-idle keep-alive connection that has served a request and has
    /// nothing in progress, else the one whose head has been arriving longest (past
    /// [`SLOW_HEAD`]); false when there is none (new clients then wait in the
    /// backlog).
    pub(super) fn evict(&mut self) -> bool {
        let now = Instant::now();
        let slots = || (0..self.slots.len()).filter_map(|i| Some((i, self.slots[i].as_ref()?)));
        let idle = (slots().filter(|(_, s)| s.idle_served()))
            .min_by_key(|(_, s)| s.progress)
            .map(|(i, _)| i);
        let slow = || {
            (slots().filter_map(|(i, s)| Some((i, s.slow_head(now)?))))
                .min_by_key(|(_, since)| *since)
                .map(|(i, _)| i)
        };
        match idle.or_else(slow) {
            Some(i) => {
                self.close(i);
                true
            }
            None => false,
        }
    }

    pub(super) fn insert(&mut self, conn: Conn) {
        let slot = Slot {
            conn: Some(conn),
            state: State::Head(None),
            progress: Instant::now(),
            served: false,
        };
        self.open += 1;
        match self.slots.iter().position(Option::is_none) {
            Some(i) => self.slots[i] = Some(slot),
            None => self.slots.push(Some(slot)),
        }
    }

    /// A handler gave a connection back with its answer.
    fn returned(&mut self, d: Done) {
        let Some(s) = self.slot(d.slot) else { return };
        s.conn = Some(d.conn);
        if let Some(head) = d.resume {
            s.progress = Instant::now();
            return self.start_body(d.slot, head, true);
        }
        s.state = State::Write(d.out, d.keep);
        s.progress = Instant::now();
        s.served = true;
        self.write(d.slot);
    }

    /// The socket of slot `i` is ready.
    fn ready(&mut self, i: usize) {
        let Some(s) = self.slot(i) else { return };
        match s.state {
            State::Head(_) => self.read_head(i),
            State::Body(_) => self.read_body(i),
            State::Write(..) => self.write(i),
            State::Linger(_) => self.discard(i),
            State::Busy => {}
        }
    }

    fn read_head(&mut self, i: usize) {
        let Some(s) = self.slot(i) else { return };
        let Some(c) = s.conn.as_mut() else { return };
        match c.read_some() {
            Ok(0) if c.buf.len() < MAX_HEAD => return self.close(i),
            Ok(_) => {
                s.progress = Instant::now();
                if let State::Head(started @ None) = &mut s.state {
                    *started = Some(s.progress);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(_) => return self.close(i),
        }
        self.parse(i);
    }

    /// Looks for a complete head in what slot `i` has read.
    fn parse(&mut self, i: usize) {
        let Some(s) = self.slot(i) else { return };
        let Some(c) = s.conn.as_mut() else { return };
        if c.buf.is_empty() {
            return;
        }
        match http::parse_head(&c.buf) {
            Ok(None) => {}
            Ok(Some(head)) => {
                c.consume(head.len);
                let has_body = head.framing != Framing::Length(0);
                if head.expect_continue && has_body {
                    // The client waits for `100 Continue`: a handler checks what
                    // can be checked without the body first (the token).
                    let Some(conn) = s.conn.take() else { return };
                    s.state = State::Busy;
                    let job = Job {
                        slot: i,
                        conn,
                        head,
                        body: Vec::new(),
                        check_only: true,
                    };
                    return submit(&self.shared, job);
                }
                self.start_body(i, head, false);
            }
            Err(e) => self.refuse(i, e),
        }
    }

    /// Slot `i` reads the body of the request with `head` next (sending `100
    /// Continue` first when `invite`).
    fn start_body(&mut self, i: usize, head: Head, invite: bool) {
        let Some(s) = self.slot(i) else { return };
        let (chunked, left) = match head.framing {
            Framing::Chunked => (Some(Chunked::new()), 0),
            Framing::Length(n) => (None, n),
            // Never from a request head.
            Framing::Close => (None, 0),
        };
        s.state = State::Body(Box::new(Incoming {
            head,
            body: Vec::new(),
            chunked,
            left,
            owe: if invite { CONTINUE.len() } else { 0 },
            deadline: Instant::now() + BODY_TIMEOUT,
            admitted: None,
        }));
        self.read_body(i);
    }

    /// Reserves room in [`BODY_BUDGET`] (or the small bodies' reserve) for the body
    /// of slot `i`: true when it has it. Bodies read at once are bounded by the
    /// budget, not by the number of connections (512 connections of 64 KiB would be
    /// 32 MiB).
    fn admit(&mut self, i: usize) -> bool {
        fn body(s: &Slot) -> Option<&Incoming> {
            match &s.state {
                State::Body(b) => Some(b),
                _ => None,
            }
        }
        let room = {
            let Some(me) = self.slots.get(i).and_then(Option::as_ref).and_then(body) else {
                return false;
            };
            if me.admitted.is_some() {
                return true;
            }
            let others: Vec<&Incoming> = (self.slots.iter().enumerate())
                .filter(|(j, _)| *j != i)
                .filter_map(|(_, s)| body(s.as_ref()?))
                .collect();
            room_for(me, &others)
        };
        let Some(Slot {
            state: State::Body(b),
            ..
        }) = self.slot(i)
        else {
            return false;
        };
        b.admitted = room;
        if room.is_some() && b.chunked.is_none() {
            b.body.reserve_exact(b.room());
        }
        room.is_some()
    }

    /// Bodies waiting for room get it when others are done, in arrival order.
    fn admit_waiting(&mut self) {
        let mut waiting: Vec<(Instant, usize)> = (self.slots.iter().enumerate())
            .filter_map(|(i, s)| match &s.as_ref()?.state {
                State::Body(b) if b.admitted.is_none() => Some((b.deadline, i)),
                _ => None,
            })
            .collect();
        crate::util::sort::sort(&mut waiting);
        for (_, i) in waiting {
            self.read_body(i);
        }
    }

    /// Answers slot `i` with the error `e` and ends the connection after it.
    fn refuse(&mut self, i: usize, e: RequestError) {
        let Some(s) = self.slot(i) else { return };
        log::debug!("api: refused a request: {e}");
        let reply = Reply::from(ApiError::from(e));
        s.state = State::Write(
            http::answer(reply, false, true, crate::util::unix_now()),
            false,
        );
        self.write(i);
    }

    /// Reads what is there of the body of slot `i` once it has room in the budget
    /// (after sending the `100 Continue` it owes), and hands the request to a
    /// handler once the body is complete.
    fn read_body(&mut self, i: usize) {
        if !self.admit(i) {
            return;
        }
        let Some(s) = self.slot(i) else { return };
        let (Some(c), State::Body(b)) = (s.conn.as_mut(), &mut s.state) else {
            return;
        };
        while b.owe > 0 {
            match c.write_parts(&CONTINUE[CONTINUE.len() - b.owe..], &[]) {
                Ok(n) if n > 0 => b.owe -= n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                _ => return self.close(i),
            }
        }
        loop {
            match b.take(c) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => return self.refuse(i, e),
            }
            match c.read_some() {
                Ok(0) => return self.refuse(i, RequestError::BodyCut),
                Ok(_) => s.progress = Instant::now(),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => return self.close(i),
            }
        }
        let Some(conn) = s.conn.take() else { return };
        let State::Body(b) = std::mem::replace(&mut s.state, State::Busy) else {
            return;
        };
        let Incoming { head, body, .. } = *b;
        submit(
            &self.shared,
            Job {
                slot: i,
                conn,
                head,
                body,
                check_only: false,
            },
        );
    }

    fn write(&mut self, i: usize) {
        let stopping = self.shared.stopping();
        let Some(s) = self.slot(i) else { return };
        let (Some(c), State::Write(out, keep)) = (s.conn.as_mut(), &mut s.state) else {
            return;
        };
        while !out.done() {
            let (a, b) = out.pending();
            match c.write_parts(a, b) {
                Ok(n) if n > 0 => {
                    out.written += n;
                    s.progress = Instant::now();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                _ => return self.close(i),
            }
        }
        if *keep {
            // Pipelined requests already read are looked at now.
            s.state = State::Head((!c.buf.is_empty()).then(Instant::now));
            self.parse(i);
        } else if stopping {
            self.close(i);
        } else {
            let _ = c.stream.shutdown(Shutdown::Write);
            c.buf = Vec::new();
            s.state = State::Linger(Instant::now() + LINGER);
            self.discard(i);
        }
    }

    /// Reads and drops input of a lingering connection; closes it at the end.
    fn discard(&mut self, i: usize) {
        let Some(Some(s)) = self.slots.get_mut(i) else {
            return;
        };
        let Some(c) = s.conn.as_mut() else { return };
        for _ in 0..8 {
            match c.stream.read(&mut self.scratch) {
                Ok(n) if n > 0 => s.progress = Instant::now(),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                _ => return self.close(i),
            }
        }
    }

    /// Closes connections past their deadline, answering a late head with 408.
    fn expire(&mut self, now: Instant) {
        for i in 0..self.slots.len() {
            let Some(s) = self.slot(i) else { continue };
            match s.deadline() {
                Some((t, Late::Answer(e))) if t <= now => {
                    // A client that does not read this is closed after LINGER.
                    s.progress = now;
                    self.refuse(i, e());
                }
                Some((t, Late::Close)) if t <= now => self.close(i),
                _ => {}
            }
        }
    }
}
