//! Network namespaces for the tests, named uniquely per run and removed on
//! drop (also when the test fails): a namespace per process that must not
//! share a loopback, and, for a cluster, a bridge in a namespace of its own
//! with one veth pair per member, addressed in 10.231.0.0/24. Those
//! addresses exist only on these veths; no route leads off the machine.

use std::process::Command;

/// The subnet every cluster's members are addressed in (private to the
/// namespaces of one [`Namespaces`]).
pub const SUBNET: &str = "10.231.0";

/// Namespaces created by one test, and the processes run in them.
pub struct Namespaces {
    tag: String,
    names: Vec<String>,
    bridge: Option<String>,
    members: u32,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

impl Namespaces {
    /// A set of namespaces whose names start with `hs<prefix><unique>`.
    pub fn new(prefix: &str) -> Result<Namespaces, String> {
        Ok(Namespaces {
            tag: super::unique(&format!("hs{prefix}")),
            names: Vec::new(),
            bridge: None,
            members: 0,
        })
    }

    /// A namespace with its loopback up; its name.
    pub fn add(&mut self, what: &str) -> Result<String, String> {
        let name = format!("{}-{what}", self.tag);
        ip(&["netns", "add", &name])?;
        self.names.push(name.clone());
        ip(&["-n", &name, "link", "set", "lo", "up"])?;
        Ok(name)
    }

    /// A namespace attached to this set's bridge (made on first use) by a
    /// veth pair, its end named `eth0`; its name and address.
    pub fn add_member(&mut self, what: &str) -> Result<(String, String), String> {
        let bridge = match &self.bridge {
            Some(b) => b.clone(),
            None => {
                let b = self.add("net")?;
                ip(&["-n", &b, "link", "add", "br0", "type", "bridge"])?;
                ip(&["-n", &b, "link", "set", "br0", "up"])?;
                self.bridge = Some(b.clone());
                b
            }
        };
        let name = self.add(what)?;
        self.members += 1;
        let n = self.members;
        assert!(n < 250, "a /24 holds the members");
        // Interface names are at most 15 bytes; these exist only for a
        // moment in the root namespace before they move.
        let (a, b) = (
            format!("hsa{}", short(&name)),
            format!("hsb{}", short(&name)),
        );
        ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])?;
        ip(&["link", "set", &a, "netns", &name])?;
        ip(&["link", "set", &b, "netns", &bridge])?;
        ip(&["-n", &name, "link", "set", &a, "name", "eth0"])?;
        let addr = format!("{SUBNET}.{n}");
        ip(&[
            "-n",
            &name,
            "addr",
            "add",
            &format!("{addr}/24"),
            "dev",
            "eth0",
        ])?;
        ip(&["-n", &name, "link", "set", "eth0", "up"])?;
        ip(&["-n", &bridge, "link", "set", &b, "master", "br0"])?;
        ip(&["-n", &bridge, "link", "set", &b, "up"])?;
        Ok((name, addr))
    }
}

/// Twelve hex digits standing for a namespace name.
fn short(name: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    format!("{:012x}", h.finish() & 0xffff_ffff_ffff)
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for name in self.names.iter().rev() {
            // Whatever still runs in it is killed first, so nothing keeps
            // the namespace alive after the test.
            if let Ok(o) = Command::new("ip").args(["netns", "pids", name]).output() {
                for pid in String::from_utf8_lossy(&o.stdout).split_whitespace() {
                    if let Ok(pid) = pid.parse::<i32>() {
                        // SAFETY: kill has no memory preconditions; the pid
                        // is a process inside a namespace this test made.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                    }
                }
            }
            // Deleting a namespace removes the veth ends inside it.
            let _ = ip(&["netns", "del", name]);
        }
    }
}
