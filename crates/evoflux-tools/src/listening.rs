//! Which TCP port a preview's server listens on.
//!
//! Two sources, because neither alone is reliable: a server's output often
//! names its URL, but is buffered (Python's `http.server` prints nothing
//! until its buffer fills when its output is a pipe) or names a port it
//! failed to bind; the kernel's socket tables name the ports actually
//! listened on, but only for processes this user may inspect. So the
//! listening sockets of the server's process tree are read from `/proc`
//! (the inode of each socket its processes hold, matched against the
//! `LISTEN` rows of their network namespace's `tcp` and `tcp6` tables),
//! the output is parsed for URLs and `port N`, and a port is chosen from
//! both and then proven by connecting to it on loopback.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

/// The most of a server's output read for URLs.
const OUTPUT_SCAN_BYTES: u64 = 64 * 1024;
/// How long one loopback connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// The `st` column of a listening socket in `/proc/net/tcp`.
const TCP_LISTEN: &str = "0A";

/// The address a preview's server answers on, if it listens yet: the
/// loopback address a connection to its port succeeded on.
pub(crate) async fn detect(root_pid: u32, output: &Path) -> Option<SocketAddr> {
    let (listening, named) = {
        let output = output.to_path_buf();
        tokio::task::spawn_blocking(move || (listening_ports(root_pid), ports_in_output(&output)))
            .await
            .ok()?
    };
    for port in choose(&listening, &named) {
        if let Some(addr) = reachable(port).await {
            return Some(addr);
        }
    }
    None
}

/// Ports worth trying, best first: a listening port the output names,
/// then the other listening ports (lowest first), then — when no socket
/// could be read at all — the ports the output names.
fn choose(listening: &BTreeSet<u16>, named: &[u16]) -> Vec<u16> {
    let mut out: Vec<u16> = named
        .iter()
        .copied()
        .filter(|p| listening.contains(p))
        .collect();
    out.extend(listening.iter().copied().filter(|p| !named.contains(p)));
    if listening.is_empty() {
        out.extend(named.iter().copied());
    }
    let mut seen = HashSet::new();
    out.retain(|p| seen.insert(*p));
    out
}

/// The loopback address `port` accepts a connection on (IPv4 first).
async fn reachable(port: u16) -> Option<SocketAddr> {
    for ip in [
        std::net::IpAddr::V4(Ipv4Addr::LOCALHOST),
        std::net::IpAddr::V6(Ipv6Addr::LOCALHOST),
    ] {
        let addr = SocketAddr::new(ip, port);
        if let Ok(Ok(_)) =
            tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr)).await
        {
            return Some(addr);
        }
    }
    None
}

/// The TCP ports the process `root` and its descendants listen on.
pub(crate) fn listening_ports(root: u32) -> BTreeSet<u16> {
    let tree = process_tree(root);
    let mut ports = BTreeSet::new();
    for pid in &tree {
        let inodes = socket_inodes(*pid);
        if inodes.is_empty() {
            continue;
        }
        for table in ["tcp", "tcp6"] {
            let path = format!("/proc/{pid}/net/{table}");
            if let Ok(text) = std::fs::read_to_string(path) {
                ports.extend(listening_in_table(&text, &inodes));
            }
        }
    }
    ports
}

/// `root` and every process descending from it, by the parent pids of
/// `/proc/<pid>/stat`.
fn process_tree(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(ppid) = parent_of(pid) {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut tree = vec![root];
    let mut i = 0;
    while let Some(pid) = tree.get(i).copied() {
        if let Some(kids) = children.get(&pid) {
            tree.extend(kids.iter().copied().filter(|k| *k != root));
        }
        i += 1;
    }
    tree
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name (which may hold spaces and parentheses):
    // state, then the parent pid.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The inodes of the sockets `pid` holds open.
fn socket_inodes(pid: u32) -> HashSet<u64> {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return HashSet::new();
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|target| {
            let target = target.to_str()?;
            target
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

/// The local ports of the `LISTEN` rows of a `/proc/net/tcp{,6}` table
/// whose socket inode is one of `inodes`.
fn listening_in_table(table: &str, inodes: &HashSet<u64>) -> Vec<u16> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let local = cols.get(1)?;
            let state = cols.get(3)?;
            let inode: u64 = cols.get(9)?.parse().ok()?;
            if *state != TCP_LISTEN || !inodes.contains(&inode) {
                return None;
            }
            let (_, port) = local.rsplit_once(':')?;
            u16::from_str_radix(port, 16).ok()
        })
        .collect()
}

/// The ports a server's output names, in order: `http(s)://host:port`
/// URLs and phrases such as `port 8000` or `listening on :3000`.
fn ports_in_output(path: &Path) -> Vec<u16> {
    use std::io::Read;
    let mut text = String::new();
    if let Ok(file) = std::fs::File::open(path) {
        let mut bytes = Vec::new();
        let _ = file.take(OUTPUT_SCAN_BYTES).read_to_end(&mut bytes);
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    ports_in_text(&text)
}

fn ports_in_text(text: &str) -> Vec<u16> {
    static PATTERN: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let Some(pattern) = PATTERN
        .get_or_init(|| {
            regex::Regex::new(
                r"(?i)(?:https?://(?:\[[0-9a-f:.]*\]|[a-z0-9.\-]+):(\d{1,5}))|(?:\bport\s*[:=]?\s*(\d{1,5})\b)|(?:\blistening on\s+\S*:(\d{1,5})\b)",
            )
            .ok()
        })
        .as_ref()
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for caps in pattern.captures_iter(text) {
        let port = (1..=3)
            .filter_map(|i| caps.get(i))
            .find_map(|m| m.as_str().parse::<u16>().ok())
            .filter(|p| *p != 0);
        if let Some(p) = port
            && !out.contains(&p)
        {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_names_ports_in_urls_and_phrases() {
        assert_eq!(
            ports_in_text(
                "Serving HTTP on :: port 8000 (http://[::]:8000/) ...\n\
                 VITE ready\n  ➜  Local:   http://localhost:5173/\n\
                 Listening on 0.0.0.0:3000\nport=0\n"
            ),
            vec![8000, 5173, 3000]
        );
        assert!(ports_in_text("no address here, build 12345 done").is_empty());
    }

    #[test]
    fn a_listening_port_the_output_names_comes_first() {
        let listening: BTreeSet<u16> = [4000, 5173, 24678].into();
        assert_eq!(choose(&listening, &[5173]), vec![5173, 4000, 24678]);
        assert_eq!(choose(&BTreeSet::new(), &[8080, 8080]), vec![8080]);
        // A named port nothing listens on is not tried when sockets are
        // known.
        assert_eq!(choose(&[9000].into(), &[8080]), vec![9000]);
    }

    #[test]
    fn listen_rows_of_our_sockets_are_read() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0\n\
   1: 0100007F:1F41 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 999 1 0000000000000000 100 0 0 10 0\n\
   2: 0100007F:1F42 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 4243 1 0000000000000000 100 0 0 10 0\n";
        let ours: HashSet<u64> = [4242, 4243].into();
        assert_eq!(listening_in_table(table, &ours), vec![8000]);
    }

    #[test]
    fn a_listening_child_is_found_through_its_parent() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // This process holds the socket: the tree rooted at it has it.
        let me = std::process::id();
        assert!(listening_ports(me).contains(&port));
        assert!(process_tree(me).contains(&me));
    }
}
