//! The thin socket shell around the encoder: a `NETLINK_NETFILTER` socket that sends
//! the whole batch in one datagram and reads the kernel's acknowledgements, or a
//! `NETLINK_ROUTE` one for the reads of `explain` (`probe`).

use std::io;
use std::mem::size_of;

/// `SOL_NETLINK` options (`linux/netlink.h`); libc does not have them on every target.
const SOL_NETLINK: libc::c_int = 270;
const NETLINK_CAP_ACK: libc::c_int = 10;

/// An open netlink socket, closed on drop.
pub struct Socket(libc::c_int);

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe {
            libc::close(self.0);
        }
    }
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Socket {
    /// Opens the socket; fails with `EPROTONOSUPPORT` where the kernel has no
    /// nfnetlink.
    pub fn open() -> io::Result<Socket> {
        Socket::open_proto(libc::NETLINK_NETFILTER)
    }

    /// Opens a netlink socket of protocol `proto` (`NETLINK_NETFILTER`,
    /// `NETLINK_ROUTE`).
    pub fn open_proto(proto: libc::c_int) -> io::Result<Socket> {
        // SAFETY: plain system call without pointers.
        let fd = check(unsafe {
            libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, proto)
        })?;
        let s = Socket(fd);
        // Errors are acknowledged without a copy of the (up to 64 KiB) message; an
        // old kernel without the option copies it, which the reads below cope with.
        let _ = s.set(SOL_NETLINK, NETLINK_CAP_ACK, 1);
        // A lost acknowledgement must not hang the daemon.
        let tv = libc::timeval {
            tv_sec: 10,
            tv_usec: 0,
        };
        // SAFETY: `tv` outlives the call and its size is passed.
        check(unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                size_of::<libc::timeval>() as libc::socklen_t,
            )
        })?;
        Ok(s)
    }

    fn set(&self, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> io::Result<()> {
        // SAFETY: `v` outlives the call and its size is passed.
        check(unsafe {
            libc::setsockopt(
                self.0,
                level,
                name,
                (&v as *const libc::c_int).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        })
        .map(drop)
    }

    /// Makes room for a datagram of `len` bytes: the batch must travel in one piece
    /// (the kernel aborts a batch split over datagrams). `SO_SNDBUFFORCE` (root)
    /// passes `net.core.wmem_max`; without it the send may fail with `EMSGSIZE`.
    pub fn send_buffer(&self, len: usize) {
        let want = libc::c_int::try_from(len + 4096).unwrap_or(libc::c_int::MAX);
        if self
            .set(libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, want)
            .is_err()
        {
            let _ = self.set(libc::SOL_SOCKET, libc::SO_SNDBUF, want);
        }
    }

    /// Sends `buf` to the kernel as one datagram. The kernel processes the batch
    /// before this returns, so its acknowledgements are waiting afterwards.
    pub fn send(&self, buf: &[u8]) -> io::Result<()> {
        // SAFETY: an all-zero sockaddr_nl is the kernel (pid 0), no groups.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        loop {
            // SAFETY: `buf` and `addr` outlive the call and their sizes are passed.
            let n = unsafe {
                libc::sendto(
                    self.0,
                    buf.as_ptr().cast(),
                    buf.len(),
                    0,
                    (&addr as *const libc::sockaddr_nl).cast(),
                    size_of::<libc::sockaddr_nl>() as libc::socklen_t,
                )
            };
            match n {
                n if n as usize == buf.len() => return Ok(()),
                n if n >= 0 => return Err(io::Error::other("short send")),
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Binds the socket to the multicast `group` (1 to 32: the events of a netlink
    /// family); a socket never bound (by a send) would receive none.
    pub fn subscribe(&self, group: u32) -> io::Result<()> {
        // SAFETY: an all-zero sockaddr_nl is valid (port id chosen by the kernel).
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        addr.nl_groups = 1 << (group - 1);
        // SAFETY: `addr` outlives the call and its size is passed.
        check(unsafe {
            libc::bind(
                self.0,
                (&addr as *const libc::sockaddr_nl).cast(),
                size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        })
        .map(drop)
    }

    /// Receives one datagram (truncated to `buf`).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.recv_flags(buf, 0)
    }

    /// [`Self::recv`] without waiting: `WouldBlock` when nothing is queued.
    pub fn recv_now(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.recv_flags(buf, libc::MSG_DONTWAIT)
    }

    fn recv_flags(&self, buf: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
        loop {
            // SAFETY: `buf` is valid for its length.
            let n = unsafe { libc::recv(self.0, buf.as_mut_ptr().cast(), buf.len(), flags) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}
