//! The serving node of the cluster tests, "node-b": a second OS process (ractor's process
//! groups are global to a process), which is this test binary run again with the ignored
//! test [`node_b`] and its settings in environment variables. It serves `relay` from a
//! registry whose idempotency claims and audit are SQLite files in the test's directory, so
//! that they outlive a kill -9, and verifies statements with node-a's public key, read from
//! that directory.

use std::{
    net::{SocketAddr, TcpListener},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::Arc,
    time::Duration,
};

use switchboard_approvals_sqlite::ApprovalsDatabase;
use switchboard_audit_sqlite::SqliteAuditStore;
use switchboard_link::{ClusterNode, ClusterNodeConfig, Cookie, StatementVerifier, VerifyingKeys};
use switchboard_registry::ToolRegistry;

use super::relay::{Relay, RelayState};

const DIR_VAR: &str = "SWITCHBOARD_TEST_NODE_B_DIR";
const LISTEN_VAR: &str = "SWITCHBOARD_TEST_NODE_B_LISTEN";

/// Files in the test's directory.
pub(crate) const NODE_B_COOKIE: &str = "node-b.cookie";
pub(crate) const NODE_A_PUBLIC_KEY: &str = "node-a.pub.pem";
pub(crate) const RUNS: &str = "runs";
pub(crate) const AUDIT: &str = "node-b-audit.db";
const APPROVALS: &str = "node-b-approvals.db";

/// node-b's process, killed when dropped.
pub(crate) struct NodeB {
    child: Child,
    pub(crate) listen: SocketAddr,
    dir: PathBuf,
}

/// A free port on the loopback.
pub(crate) fn free_listen_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
}

impl NodeB {
    /// Starts node-b listening on `listen`, with the files in `dir`.
    pub(crate) fn start(dir: &Path, listen: SocketAddr) -> Self {
        let child = Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                "cluster::serving::node_b",
                "--exact",
                "--ignored",
                "--nocapture",
            ])
            .env(DIR_VAR, dir)
            .env(LISTEN_VAR, listen.to_string())
            .stdin(Stdio::null())
            .spawn()
            .expect("node-b starts");
        Self {
            child,
            listen,
            dir: dir.to_owned(),
        }
    }

    /// Sends the signal `signal` (`STOP`, `CONT`, `KILL`) to node-b.
    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal} node-b");
    }

    /// Kills node-b (kill -9), waits for it, and starts it again on the same address.
    pub(crate) fn kill_and_restart(mut self) -> Self {
        self.signal("KILL");
        let _ = self.child.wait();
        Self::start(&self.dir.clone(), self.listen)
    }
}

impl Drop for NodeB {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// node-b itself: runs only when a cluster test starts this binary as node-b (the variables
/// are set), and serves until it is killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "node-b of the cluster tests: they start it as a process of its own"]
async fn node_b() {
    let (Some(dir), Some(listen)) = (std::env::var_os(DIR_VAR), std::env::var_os(LISTEN_VAR))
    else {
        return;
    };
    let dir = PathBuf::from(dir);
    let listen: SocketAddr = listen
        .to_str()
        .and_then(|text| text.parse().ok())
        .expect("a listen address");
    let front_keys =
        VerifyingKeys::from_pem_files(&[dir.join(NODE_A_PUBLIC_KEY)]).expect("node-a's public key");
    let verifier = StatementVerifier::new("node-b").peer("node-a", front_keys);
    let approvals = ApprovalsDatabase::open(dir.join(APPROVALS)).expect("the approvals file");
    let audit = SqliteAuditStore::open(dir.join(AUDIT)).expect("the audit file");
    let _registry = ToolRegistry::builder()
        .domain_state::<Relay>(RelayState {
            served_by: "node-b".to_owned(),
            runs: Some(dir.join(RUNS)),
        })
        .idempotency_store(Arc::new(
            approvals.idempotency_store(Duration::from_secs(3600)),
        ))
        .audit_store(Arc::new(audit))
        .statement_verifier(Arc::new(verifier))
        .join_domain_groups()
        .start()
        .await
        .expect("node-b's registry starts");
    let cookie = Cookie::from_file(dir.join(NODE_B_COOKIE)).expect("node-b's cookie");
    let _node = ClusterNode::start(ClusterNodeConfig::new("node-b", listen, cookie))
        .await
        .expect("node-b's node server starts");
    std::future::pending::<()>().await;
}
