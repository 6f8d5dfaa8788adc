//! A routed lab: four namespaces in a row, the delay link in the middle,
//! two Linux routers forwarding (issue 44's path scenario).
//!
//! ```text
//!  ns CLIENT        ns R1 (router)              ns R2 (router)        ns SERVER
//!  10.77.1.1 ─veth─ 10.77.1.2  10.77.0.1 ─rtl0⇄[link: delay]⇄rtl0─ 10.77.0.2  10.77.2.1 ─veth─ 10.77.2.2
//! ```
//!
//! R1 and R2 are the [`Lab`]'s own client and server namespaces (joined by
//! its userspace delay link, which passes every IP packet, ICMP included,
//! with its TTL as it came: it is a wire, not a hop); the client and the
//! server hang off them on veth pairs. Both routers forward
//! (`ip_forward`), so the kernel decrements the TTL and answers an expired
//! one with ICMP time-exceeded; their ICMP rate limit is off
//! (`icmp_ratelimit` 0), so every probe gets its answer. A trace from the
//! client sees R1 (10.77.1.2) at about 0 ms, R2 (10.77.0.2, the far end of
//! the link) at the link's RTT, and the server at the same. IPv4 only.

use std::net::Ipv4Addr;
use std::process::{Child, Command};
use std::sync::atomic::Ordering;

use crate::link::LinkConfig;
use crate::netns::{self, Netns};
use crate::topology::{Host, Lab, LabError, Ns, COUNTER};

/// One of the routed lab's four namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    /// The client, behind R1.
    Client,
    /// The router before the delay link.
    R1,
    /// The router after it.
    R2,
    /// The server, behind R2.
    Server,
}

/// Four namespaces in a row with the delay link between the routers.
/// Drop removes everything (the [`Lab`]'s link and namespaces, then the
/// two end namespaces).
#[derive(Debug)]
pub struct RoutedLab {
    lab: Lab,
    client: Ns,
    server: Ns,
}

impl RoutedLab {
    /// The client's address.
    pub const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 77, 1, 1);
    /// R1's address on the client's side (its ICMP answers to the client
    /// come from it).
    pub const R1: Ipv4Addr = Ipv4Addr::new(10, 77, 1, 2);
    /// R2's address on the link (its ICMP answers to the client leave
    /// through the link, so they come from it).
    pub const R2: Ipv4Addr = Lab::SERVER_V4;
    /// The server's address.
    pub const SERVER: Ipv4Addr = Ipv4Addr::new(10, 77, 2, 2);

    /// Build it: the [`Lab`] with `cfg` (R1, R2 and the link), two more
    /// namespaces, the veth pairs, the routes and the sysctls.
    ///
    /// # Errors
    /// What [`Lab::new`] returns, and [`LabError::Namespace`] /
    /// [`LabError::Sysctl`] for the rest; whatever was created is removed.
    pub fn new(cfg: LinkConfig) -> Result<RoutedLab, LabError> {
        let lab = Lab::new(cfg)?;
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let base = format!("rttlens-{}-{n}", std::process::id());
        let client = Ns::create(&format!("{base}-end-client"))?;
        let server = Ns::create(&format!("{base}-end-server"))?;
        let r = RoutedLab {
            lab,
            client,
            server,
        };
        r.wire()?;
        Ok(r)
    }

    fn wire(&self) -> Result<(), LabError> {
        let (c, r1, r2, s) = (
            self.name(Node::Client).to_string(),
            self.name(Node::R1).to_string(),
            self.name(Node::R2).to_string(),
            self.name(Node::Server).to_string(),
        );
        // veth pairs: R1's `rtv1` to the client's `rtv0`, R2's `rtv2` to
        // the server's `rtv0`
        netns::ip(&[
            "-n", &r1, "link", "add", "rtv1", "type", "veth", "peer", "name", "rtv0", "netns", &c,
        ])?;
        netns::ip(&[
            "-n", &r2, "link", "add", "rtv2", "type", "veth", "peer", "name", "rtv0", "netns", &s,
        ])?;
        for (ns, dev, addr) in [
            (&c, "rtv0", "10.77.1.1/24"),
            (&r1, "rtv1", "10.77.1.2/24"),
            (&r2, "rtv2", "10.77.2.1/24"),
            (&s, "rtv0", "10.77.2.2/24"),
        ] {
            netns::ip(&["-n", ns, "addr", "add", addr, "dev", dev])?;
            netns::ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        netns::ip(&["-n", &c, "route", "add", "default", "via", "10.77.1.2"])?;
        netns::ip(&["-n", &s, "route", "add", "default", "via", "10.77.2.1"])?;
        netns::ip(&[
            "-n",
            &r1,
            "route",
            "add",
            "10.77.2.0/24",
            "via",
            "10.77.0.2",
        ])?;
        netns::ip(&[
            "-n",
            &r2,
            "route",
            "add",
            "10.77.1.0/24",
            "via",
            "10.77.0.1",
        ])?;
        for node in [Node::R1, Node::R2] {
            let ns = self.netns(node);
            ns.set_sysctl("net/ipv4/ip_forward", "1")?;
            ns.set_sysctl("net/ipv4/icmp_ratelimit", "0")?;
        }
        self.netns(Node::Server)
            .set_sysctl("net/ipv4/icmp_ratelimit", "0")
    }

    /// The namespace of `node`.
    pub fn netns(&self, node: Node) -> &Netns {
        match node {
            Node::Client => &self.client.0,
            Node::R1 => self.lab.netns(Host::Client),
            Node::R2 => self.lab.netns(Host::Server),
            Node::Server => &self.server.0,
        }
    }

    /// The namespace name of `node`.
    pub fn name(&self, node: Node) -> &str {
        self.netns(node).name()
    }

    /// The address of `node` that a trace from the client shows (the
    /// client's own for the client).
    pub fn addr(node: Node) -> Ipv4Addr {
        match node {
            Node::Client => RoutedLab::CLIENT,
            Node::R1 => RoutedLab::R1,
            Node::R2 => RoutedLab::R2,
            Node::Server => RoutedLab::SERVER,
        }
    }

    /// The delay link's configuration.
    pub fn link_config(&self) -> Option<&LinkConfig> {
        self.lab.link_config()
    }

    /// Run `f` on a thread inside `node`'s namespace and wait for it.
    ///
    /// # Errors
    /// The namespace could not be entered.
    pub fn run_in<F, T>(&self, node: Node, f: F) -> std::io::Result<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.netns(node).run(f)
    }

    /// Spawn a thread inside `node`'s namespace running `f`.
    pub fn thread_in<F, T>(&self, node: Node, f: F) -> std::thread::JoinHandle<std::io::Result<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.netns(node).spawn_thread(f)
    }

    /// Spawn `cmd` inside `node`'s namespace.
    ///
    /// # Errors
    /// Spawning failed.
    pub fn spawn_in(&self, node: Node, cmd: &Command) -> std::io::Result<Child> {
        self.netns(node).spawn(cmd)
    }
}
