//! The cluster link from the command line, with two real processes (built with the
//! `cluster` feature): node B is `switchboard serve --http --domains roster` whose config file
//! sets `[link] cluster_listen`, `cookie_file` and `[[link.peer]] node-a`; node A is
//! `switchboard call` whose config file lists `[[remote_domain]] roster` with `link =
//! "cluster"` at B's cluster address. The call runs on B, and both audit stores hold its
//! record under the caller's correlation id.
//!
//! `cargo nextest run -p switchboard-cli --features cluster -E 'test(cluster_link)'`
#![cfg(feature = "cluster")]

use std::{net::TcpListener, path::PathBuf, process::Stdio};

use serde_json::Value;

use crate::common::{
    ACME_ADMIN, assert_one_call_on_two_nodes, bounded, killed, line_containing, stderr_lines,
    switchboard,
};

/// A directory of the test, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    fn store(&self, name: &str) -> String {
        format!("sqlite:{}", self.path(name).display())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A free local port (bound, then released for a node to take).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// `switchboard ARGS` run to its end: the exit code and standard output as JSON.
async fn run_json(command: &mut tokio::process::Command) -> (Option<i32>, Value) {
    let output = bounded("switchboard", command.output())
        .await
        .expect("the binary runs");
    let stdout = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "stdout is not JSON ({error}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code(), stdout)
}

/// The records of the audit store `store` with the correlation id `correlation`.
async fn records_of(store: &str, correlation: &str) -> Vec<Value> {
    let (code, listed) = run_json(&mut switchboard(&["audit", "--audit", store, "--json"])).await;
    assert_eq!(code, Some(0), "{listed}");
    listed
        .as_array()
        .expect("an array")
        .iter()
        .filter(|record| record["correlation_id"] == correlation)
        .cloned()
        .collect()
}

/// Node B serving the roster over the cluster link, and node A's config that reaches it there:
/// B is killed when this is dropped.
pub(crate) struct ClusterPair {
    dir: Scratch,
    pub(crate) a_config: PathBuf,
    pub(crate) b_audit: String,
    b: tokio::process::Child,
}

impl ClusterPair {
    /// Makes A's key, the shared cookie and both configs, and starts B.
    pub(crate) async fn start() -> Self {
        let dir = Scratch(
            std::env::temp_dir().join(format!("switchboard-cluster-{}", uuid::Uuid::new_v4())),
        );
        std::fs::create_dir_all(&dir.0).expect("scratch dir");
        let key = dir.path("node-a.pem");
        let output = bounded(
            "link-key new",
            switchboard(&["link-key", "new", key.to_str().expect("UTF-8")]).output(),
        )
        .await
        .expect("the binary runs");
        assert!(output.status.success(), "{output:?}");
        let cookie = dir.path("cluster.cookie");
        std::fs::write(
            &cookie,
            format!("{}\n", uuid::Uuid::new_v4().simple().to_string().repeat(2)),
        )
        .expect("cookie");
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&cookie, std::fs::Permissions::from_mode(0o600))
                .expect("mode");
        }
        let (a_port, b_port) = (free_port(), free_port());
        let b_config = dir.path("b.toml");
        std::fs::write(
            &b_config,
            format!(
                "[link]\nnode = \"node-b\"\ncluster_listen = \"127.0.0.1:{b_port}\"\n\
                 cookie_file = \"{}\"\n\n[[link.peer]]\nname = \"node-a\"\n\
                 public_key_files = [\"{}.pub\"]\n",
                cookie.display(),
                key.display()
            ),
        )
        .expect("B's config");
        let a_config = dir.path("a.toml");
        std::fs::write(
            &a_config,
            format!(
                "[link]\nnode = \"node-a\"\nsigning_key_files = [\"{}\"]\n\
                 cluster_listen = \"127.0.0.1:{a_port}\"\ncookie_file = \"{}\"\n\
                 cluster_health_every = \"500ms\"\ncluster_health_deadline = \"300ms\"\n\
                 cluster_start_timeout = \"10s\"\n\n\
                 [[remote_domain]]\nname = \"roster\"\nlink = \"cluster\"\nnode = \"node-b\"\n\
                 addr = \"127.0.0.1:{b_port}\"\n",
                key.display(),
                cookie.display()
            ),
        )
        .expect("A's config");

        let (b_audit, b_approvals, b_workflows) = (
            dir.store("b-audit.db"),
            dir.store("b-approvals.db"),
            dir.store("b-workflows.db"),
        );
        let mut b = switchboard(&[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--domains",
            "roster",
            "--config",
            b_config.to_str().expect("UTF-8"),
            "--audit",
            &b_audit,
            "--approvals",
            &b_approvals,
            "--workflows",
            &b_workflows,
        ])
        .args(ACME_ADMIN)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("B starts");
        let mut lines = stderr_lines(&mut b);
        // B's cluster server listens before its registry starts, and its registry before the
        // MCP endpoint: the endpoint's line says both are up.
        line_containing("B's start-up line", &mut lines, "/mcp").await;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            dir,
            a_config,
            b_audit,
            b,
        }
    }

    /// `switchboard ARGS` as node A (its config, its audit store, acme's admin): the exit code
    /// and standard output as JSON.
    pub(crate) async fn on_a(&self, args: &[&str]) -> (Option<i32>, Value) {
        let a_audit = self.a_audit();
        let mut all = args.to_vec();
        all.extend([
            "--config",
            self.a_config.to_str().expect("UTF-8"),
            "--audit",
            &a_audit,
        ]);
        run_json(switchboard(&all).args(ACME_ADMIN)).await
    }

    /// A's audit store.
    pub(crate) fn a_audit(&self) -> String {
        self.dir.store("a-audit.db")
    }

    /// `sqlite:` and the path of the file `name` in the pair's directory.
    pub(crate) fn store(&self, name: &str) -> String {
        self.dir.store(name)
    }

    /// Kills B.
    pub(crate) async fn stop(&mut self) {
        killed(&mut self.b).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_on_a_runs_on_b_through_the_cluster_link() {
    let mut pair = ClusterPair::start().await;
    let (code, answer) = pair
        .on_a(&[
            "call",
            "roster_list_shifts",
            r#"{"from": "2026-11-23", "to": "2026-11-29"}"#,
            "--json",
            "--correlation",
            "corr-cluster-1",
        ])
        .await;
    assert_eq!(code, Some(0), "{answer}");
    assert!(
        !answer["result"]["shifts"]
            .as_array()
            .expect("shifts")
            .is_empty(),
        "{answer}"
    );

    let front = records_of(&pair.a_audit(), "corr-cluster-1").await;
    let served = records_of(&pair.b_audit, "corr-cluster-1").await;
    pair.stop().await;
    assert_eq!(front.len(), 1, "{front:?}");
    assert_eq!(served.len(), 1, "the call ran on B: {served:?}");
    let (a, b) = (&front[0], &served[0]);
    assert_one_call_on_two_nodes(a, b);
    assert_eq!(a["tool"], "roster_list_shifts", "{a}");
}
