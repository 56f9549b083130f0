//! Sockets, cores and SMT siblings, and how far apart two CPUs are.
//!
//! CPUs are numbered as Linux enumerates them on x86 servers: first the
//! first hardware thread of every core, socket by socket, then the
//! second threads in the same order (so on 2 sockets x 32 cores x 2,
//! CPU 0 and CPU 64 are siblings, CPUs 0-31 are socket 0's cores and
//! 32-63 socket 1's).

use crate::CpuId;

/// A machine's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Topology {
    pub sockets: u32,
    pub cores_per_socket: u32,
    /// Hardware threads per core: 1 (no SMT) or 2.
    pub threads_per_core: u32,
}

/// How far a cache line travels between two CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Distance {
    /// The same CPU.
    Same,
    /// SMT siblings: one core, shared L1 and L2.
    Smt,
    /// Two cores of one socket (one LLC).
    Socket,
    /// Cores of two sockets.
    Remote,
}

impl Topology {
    pub const fn new(sockets: u32, cores_per_socket: u32, threads_per_core: u32) -> Topology {
        Topology {
            sockets,
            cores_per_socket,
            threads_per_core,
        }
    }

    /// Online CPUs (hardware threads).
    pub fn cpus(&self) -> u32 {
        self.sockets * self.cores_per_socket * self.threads_per_core
    }

    /// This shape with `n` CPUs: as many sockets as `n` needs (at most
    /// this machine's), the same threads per core, the cores spread evenly
    /// over the sockets. A machine of 8 CPUs cut from a 2 x 32 x 2 server
    /// is one socket of 4 cores x 2 threads.
    pub fn resized(&self, n: u32) -> Topology {
        let n = n.max(1);
        let threads = self.threads_per_core.clamp(1, n);
        let per_socket = self.cores_per_socket * threads;
        let sockets = n.div_ceil(per_socket.max(1)).clamp(1, self.sockets.max(1));
        let cores = n.div_ceil(sockets * threads);
        Topology::new(sockets, cores, threads)
    }

    /// The socket and core (numbered machine-wide) of `cpu`.
    pub fn place(&self, cpu: CpuId) -> (u32, u32) {
        let cores = self.sockets * self.cores_per_socket;
        let core = cpu.0 % cores.max(1);
        (core / self.cores_per_socket.max(1), core)
    }

    /// How far apart `a` and `b` are.
    pub fn distance(&self, a: CpuId, b: CpuId) -> Distance {
        if a == b {
            return Distance::Same;
        }
        let (sa, ca) = self.place(a);
        let (sb, cb) = self.place(b);
        if ca == cb {
            Distance::Smt
        } else if sa == sb {
            Distance::Socket
        } else {
            Distance::Remote
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siblings_sockets_and_remote_cores_as_linux_numbers_them() {
        let t = Topology::new(2, 32, 2);
        assert_eq!(t.cpus(), 128);
        assert_eq!(t.distance(CpuId(0), CpuId(0)), Distance::Same);
        assert_eq!(t.distance(CpuId(0), CpuId(64)), Distance::Smt);
        assert_eq!(t.distance(CpuId(0), CpuId(31)), Distance::Socket);
        assert_eq!(t.distance(CpuId(0), CpuId(32)), Distance::Remote);
        assert_eq!(t.distance(CpuId(1), CpuId(96)), Distance::Remote);
        assert_eq!(t.distance(CpuId(33), CpuId(96)), Distance::Socket);
        assert_eq!(t.distance(CpuId(96), CpuId(32)), Distance::Smt);
    }

    #[test]
    fn a_smaller_machine_keeps_the_shape() {
        let t = Topology::new(2, 32, 2);
        assert_eq!(t.resized(8), Topology::new(1, 4, 2));
        assert_eq!(t.resized(64), Topology::new(1, 32, 2));
        assert_eq!(t.resized(65), Topology::new(2, 17, 2));
        assert_eq!(t.resized(1), Topology::new(1, 1, 1));
        let guest = Topology::new(1, 64, 1);
        assert_eq!(guest.resized(8), Topology::new(1, 8, 1));
    }
}
