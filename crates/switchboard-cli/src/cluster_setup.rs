//! The cluster link from the command line: `[link] cluster_listen`, `cookie_file`,
//! `cluster_health_every`, `cluster_health_deadline`, `cluster_start_timeout` and
//! `[[remote_domain]] link = "cluster"` with `node` and `addr` (docs/deploy.md, "The cluster
//! link").
//!
//! Built with the `cluster` feature, a node starts one `ClusterNode` listening on
//! `cluster_listen`:
//!
//! - a **serving node** (`serve` with `[[link.peer]]`) has its domain actors join their process
//!   groups and verifies each call's statement with the peers' keys;
//! - a **front node** connects to the node of each cluster remote domain and registers a
//!   `ClusterDomainLink` for it, kept (with the node) as long as the registry runs.
//!
//! Without the feature, every cluster key is a usage error that says how to build a binary
//! with it.

use std::path::PathBuf;

#[cfg(feature = "cluster")]
use std::{net::SocketAddr, sync::Arc, time::Duration};

#[cfg(feature = "cluster")]
use switchboard::RegistryBuilder;
#[cfg(feature = "cluster")]
use switchboard_link::{
    ClusterDomainLink, ClusterNode, ClusterNodeConfig, Cookie, StatementSigner, StatementVerifier,
};

use crate::app::UsageError;
#[cfg(feature = "cluster")]
use crate::config_file::parse_age;

/// The `[link]` keys of the cluster link, as the config file gives them.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ClusterKeys<'a> {
    /// `[link] cluster_listen`.
    pub(crate) listen: Option<&'a str>,
    /// `[link] cookie_file`.
    pub(crate) cookie_file: Option<&'a PathBuf>,
    /// `[link] cluster_health_every`.
    pub(crate) health_every: Option<&'a str>,
    /// `[link] cluster_health_deadline`.
    pub(crate) health_deadline: Option<&'a str>,
    /// `[link] cluster_start_timeout`.
    pub(crate) start_timeout: Option<&'a str>,
}

impl ClusterKeys<'_> {
    /// The first key given, by its name.
    fn first_given(&self) -> Option<&'static str> {
        [
            ("cluster_listen", self.listen.is_some()),
            ("cookie_file", self.cookie_file.is_some()),
            ("cluster_health_every", self.health_every.is_some()),
            ("cluster_health_deadline", self.health_deadline.is_some()),
            ("cluster_start_timeout", self.start_timeout.is_some()),
        ]
        .into_iter()
        .find_map(|(key, given)| given.then_some(key))
    }
}

/// How to build a binary with the cluster link.
#[cfg(not(feature = "cluster"))]
const BUILD_WITH_CLUSTER: &str = "this switchboard binary was built without the `cluster` \
     feature; build one with it (`cargo build -p switchboard-cli --features cluster`) or use \
     `link = \"mcp\"`";

/// A `[[remote_domain]] link = "cluster"` entry, checked.
#[cfg(feature = "cluster")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClusterRemote {
    /// The linked domain.
    pub(crate) domain: String,
    /// The node that serves it (its `[link] node`).
    pub(crate) node: String,
    /// Where that node's `cluster_listen` is.
    pub(crate) addr: SocketAddr,
}

/// Without the `cluster` feature, no cluster remote domain passes [`remote`].
#[cfg(not(feature = "cluster"))]
pub(crate) type ClusterRemote = std::convert::Infallible;

/// A `[[remote_domain]] link = "cluster"` entry's keys.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(
    not(feature = "cluster"),
    expect(dead_code, reason = "only the name is read: the entry is refused")
)]
pub(crate) struct ClusterRemoteKeys<'a> {
    pub(crate) name: &'a str,
    pub(crate) node: &'a str,
    pub(crate) addr: Option<&'a str>,
    /// The keys of an MCP link given with it, by name.
    pub(crate) mcp_keys: &'a [&'static str],
}

/// Checks one cluster remote domain.
#[cfg(not(feature = "cluster"))]
pub(crate) fn remote(keys: ClusterRemoteKeys<'_>) -> Result<ClusterRemote, UsageError> {
    Err(UsageError::new(format!(
        "`[[remote_domain]] link = \"cluster\"` of `{}` in the config file: {BUILD_WITH_CLUSTER}",
        keys.name
    )))
}

/// Checks one cluster remote domain.
#[cfg(feature = "cluster")]
pub(crate) fn remote(keys: ClusterRemoteKeys<'_>) -> Result<ClusterRemote, UsageError> {
    let name = keys.name;
    let key = |field: &str| format!("`[[remote_domain]] {field}` of `{name}` in the config file");
    if let Some(field) = keys.mcp_keys.first() {
        return Err(UsageError::new(format!(
            "{} belongs to `link = \"mcp\"`: a cluster link takes `node` and `addr` (and its \
             health checks from `[link] cluster_health_every` and `cluster_health_deadline`)",
            key(field)
        )));
    }
    if keys.node.trim().is_empty() {
        return Err(UsageError::new(format!(
            "{} is empty: name the node that serves the domain (its `[link] node`)",
            key("node")
        )));
    }
    let Some(addr) = keys.addr else {
        return Err(UsageError::new(format!(
            "{} is missing: give the `[link] cluster_listen` address of the node `{}` (e.g. \
             `addr = \"10.0.0.2:4100\"`)",
            key("addr"),
            keys.node
        )));
    };
    let addr = addr.parse::<SocketAddr>().map_err(|error| {
        UsageError::new(format!(
            "{}: `{addr}` is not an IP address and port ({error})",
            key("addr")
        ))
    })?;
    Ok(ClusterRemote {
        domain: name.to_owned(),
        node: keys.node.to_owned(),
        addr,
    })
}

/// The cluster link of this node, checked: nothing opens yet.
#[derive(Debug, Default)]
pub(crate) struct ClusterSetup {
    #[cfg(feature = "cluster")]
    node: Option<ClusterNodeConfig>,
    /// The remote domains reached through the cluster link, in the file's order.
    #[cfg(feature = "cluster")]
    remote: Vec<ClusterRemote>,
    /// The verifier of the calls that come over the cluster link, when this node serves them.
    #[cfg(feature = "cluster")]
    serves: Option<Arc<StatementVerifier>>,
    /// How long the links may take to come up at start.
    #[cfg(feature = "cluster")]
    start_timeout: Duration,
}

impl ClusterSetup {
    /// Checks the `[link]` cluster keys against the cluster remote domains and the peers'
    /// verifier. `serving`: the command is `serve`, which serves the peers' calls.
    #[cfg(not(feature = "cluster"))]
    pub(crate) fn resolve(
        keys: ClusterKeys<'_>,
        _node: Option<&str>,
        remote: Vec<ClusterRemote>,
        _verifier: Option<&std::sync::Arc<switchboard_link::StatementVerifier>>,
        _serving: bool,
    ) -> Result<Self, UsageError> {
        if let Some(key) = keys.first_given() {
            return Err(UsageError::new(format!(
                "`[link] {key}` in the config file is a key of the cluster link: \
                 {BUILD_WITH_CLUSTER}"
            )));
        }
        debug_assert!(remote.is_empty(), "refused by `remote`");
        Ok(Self::default())
    }

    /// Checks the `[link]` cluster keys against the cluster remote domains and the peers'
    /// verifier. `serving`: the command is `serve`, which serves the peers' calls.
    #[cfg(feature = "cluster")]
    pub(crate) fn resolve(
        keys: ClusterKeys<'_>,
        node: Option<&str>,
        remote: Vec<ClusterRemote>,
        verifier: Option<&Arc<StatementVerifier>>,
        serving: bool,
    ) -> Result<Self, UsageError> {
        let age = |field: &str, text: Option<&str>, default: Duration| match text {
            None => Ok(default),
            Some(text) => match parse_age(text) {
                Ok(age) if age.is_zero() => Err(UsageError::new(format!(
                    "`[link] {field}` in the config file must be longer than zero"
                ))),
                Ok(age) => Ok(age),
                Err(error) => Err(UsageError::new(format!(
                    "`[link] {field}` in the config file: {error}"
                ))),
            },
        };
        let health_every = age(
            "cluster_health_every",
            keys.health_every,
            Duration::from_secs(2),
        )?;
        let ping_deadline = age(
            "cluster_health_deadline",
            keys.health_deadline,
            Duration::from_secs(1),
        )?;
        let start_timeout = age(
            "cluster_start_timeout",
            keys.start_timeout,
            Duration::from_secs(5),
        )?;
        let Some(listen) = keys.listen else {
            if !remote.is_empty() {
                return Err(UsageError::new(
                    "`[[remote_domain]] link = \"cluster\"` in the config file needs `[link] \
                     cluster_listen`: the address this node's cluster server listens on (e.g. \
                     `cluster_listen = \"10.0.0.1:4100\"`)",
                ));
            }
            if let Some(key) = keys.first_given() {
                return Err(UsageError::new(format!(
                    "`[link] {key}` in the config file needs `[link] cluster_listen`: the \
                     address this node's cluster server listens on"
                )));
            }
            return Ok(Self::default());
        };
        let listen = listen.parse::<SocketAddr>().map_err(|error| {
            UsageError::new(format!(
                "`[link] cluster_listen` in the config file: `{listen}` is not an IP address \
                 and port ({error})"
            ))
        })?;
        let Some(name) = node else {
            return Err(UsageError::new(
                "`[link] cluster_listen` in the config file needs `[link] node`: the name the \
                 other nodes know this node by",
            ));
        };
        if remote.is_empty() && verifier.is_none() {
            return Err(UsageError::new(
                "`[link] cluster_listen` in the config file serves nothing: list the nodes \
                 whose calls this node serves (`[[link.peer]]`), or the domains it reaches \
                 through the cluster (`[[remote_domain]] link = \"cluster\"`)",
            ));
        }
        let Some(cookie_file) = keys.cookie_file else {
            return Err(UsageError::new(
                "`[link] cluster_listen` in the config file needs `[link] cookie_file`: the \
                 cluster's shared secret (`openssl rand -hex 32 > FILE; chmod 600 FILE`)",
            ));
        };
        let cookie = Cookie::from_file(cookie_file).map_err(|error| {
            UsageError::new(format!("`[link] cookie_file` in the config file: {error}"))
        })?;
        let mut config = ClusterNodeConfig::new(name, listen, cookie);
        config.health_interval = health_every;
        config.ping_deadline = ping_deadline;
        for entry in &remote {
            match config.peers.iter().find(|peer| peer.name == entry.node) {
                Some(peer) if peer.addr != entry.addr => {
                    return Err(UsageError::new(format!(
                        "`[[remote_domain]] addr` of `{}` in the config file: the node `{}` is \
                         at {} in another entry; give one address per node",
                        entry.domain, entry.node, peer.addr
                    )));
                }
                Some(_) => {}
                None => config = config.peer(entry.node.clone(), entry.addr),
            }
        }
        let serves = if serving { verifier.cloned() } else { None };
        if serves.is_none() && remote.is_empty() {
            // Only `serve` serves the peers' calls: the other commands open no cluster server.
            return Ok(Self::default());
        }
        Ok(Self {
            node: Some(config),
            remote,
            serves,
            start_timeout,
        })
    }

    /// The node that serves `domain`, when it is reached through the cluster link.
    #[cfg(feature = "cluster")]
    pub(crate) fn remote_node(&self, domain: &str) -> Option<&str> {
        self.remote
            .iter()
            .find(|remote| remote.domain == domain)
            .map(|remote| remote.node.as_str())
    }

    /// The node that serves `domain`, when it is reached through the cluster link.
    #[cfg(not(feature = "cluster"))]
    pub(crate) fn remote_node(&self, _domain: &str) -> Option<&str> {
        None
    }

    /// Starts the cluster node and one link per cluster remote domain, and waits up to
    /// `cluster_start_timeout` for each link to answer a ping. A link still down then stops
    /// the run when `strict`, else its calls answer `domain_unavailable` until it is up.
    #[cfg(feature = "cluster")]
    pub(crate) async fn start(
        &self,
        signer: Option<&Arc<StatementSigner>>,
        strict: bool,
    ) -> anyhow::Result<Option<ClusterLinks>> {
        use anyhow::Context as _;
        use switchboard::registry::{DomainLink as _, LinkHealth};
        let Some(config) = &self.node else {
            return Ok(None);
        };
        let node = ClusterNode::start(config.clone())
            .await
            .context("the cluster link did not start")?;
        let mut links = Vec::with_capacity(self.remote.len());
        for remote in &self.remote {
            let signer = signer.context("a cluster remote domain without a signer")?;
            let link = node
                .link(&remote.node, &remote.domain, Arc::clone(signer))
                .with_context(|| format!("the link to the remote domain `{}`", remote.domain))?;
            links.push((remote.domain.clone(), link));
        }
        let deadline = tokio::time::Instant::now() + self.start_timeout;
        for (domain, link) in &links {
            while link.health() != LinkHealth::Up && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            let health = link.health();
            if health == LinkHealth::Up {
                continue;
            }
            let reason = match health {
                LinkHealth::Open { reason } => reason,
                _ => format!(
                    "no answer to a ping within {} ms",
                    self.start_timeout.as_millis()
                ),
            };
            if strict {
                anyhow::bail!(
                    "the remote domain `{domain}` is not reachable at start through the cluster \
                     link ({reason}); --strict-remote (or `[link] strict_remote`) refuses to run \
                     without it"
                );
            }
            tracing::warn!(
                domain = %domain,
                "the remote domain is not reachable at start through the cluster link \
                 ({reason}); its calls answer domain_unavailable until its node answers"
            );
        }
        Ok(Some(ClusterLinks {
            _node: node,
            links,
            serves: self.serves.clone(),
        }))
    }
}

/// The cluster node and its links, started: kept as long as the registry.
#[cfg(feature = "cluster")]
#[derive(Debug)]
pub(crate) struct ClusterLinks {
    /// Dropping it stops the node server and the sessions.
    _node: ClusterNode,
    links: Vec<(String, Arc<ClusterDomainLink>)>,
    serves: Option<Arc<StatementVerifier>>,
}

#[cfg(feature = "cluster")]
impl ClusterLinks {
    /// `builder` serving each cluster remote domain through its link, and, on a serving
    /// node, serving the peers' calls to its own domains.
    pub(crate) fn register(&self, mut builder: RegistryBuilder) -> RegistryBuilder {
        for (domain, link) in &self.links {
            builder = builder.remote_domain(domain.clone(), Arc::clone(link) as _);
        }
        if let Some(verifier) = &self.serves {
            builder = builder
                .join_domain_groups()
                .statement_verifier(Arc::clone(verifier) as _);
        }
        builder
    }
}

#[cfg(test)]
mod tests {
    use crate::link_setup::{
        LinkFile,
        tests::{keyed, refused, remote, temp},
    };
    #[cfg(feature = "cluster")]
    use crate::link_setup::{LinkSetup, RemoteDomainFile};

    #[cfg(not(feature = "cluster"))]
    #[test]
    fn cluster_keys_say_how_to_build_a_binary_with_the_cluster_feature() {
        let dir = temp("cluster-off");
        let link = keyed(&dir);
        let error = refused(&link, &[remote("roster", "cluster")], None);
        assert!(error.contains("`[[remote_domain]] link"), "{error}");
        assert!(error.contains("without the `cluster` feature"), "{error}");
        assert!(
            error.contains("cargo build -p switchboard-cli --features cluster"),
            "{error}"
        );
        let listening = LinkFile {
            cluster_listen: Some("127.0.0.1:4100".to_owned()),
            ..keyed(&dir)
        };
        let error = refused(&listening, &[], None);
        assert!(error.contains("`[link] cluster_listen`"), "{error}");
        assert!(error.contains("--features cluster"), "{error}");
        let cookie = LinkFile {
            cookie_file: Some(dir.join("cluster.cookie")),
            ..keyed(&dir)
        };
        let error = refused(&cookie, &[], None);
        assert!(error.contains("`[link] cookie_file`"), "{error}");
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A `[[remote_domain]] link = "cluster"` entry of `name` on `node-b` at `addr`.
    #[cfg(feature = "cluster")]
    fn cluster(name: &str, addr: &str) -> RemoteDomainFile {
        RemoteDomainFile {
            url: None,
            addr: Some(addr.to_owned()),
            health_every: None,
            health_deadline: None,
            ..remote(name, "cluster")
        }
    }

    /// `keyed` listening for the cluster with a cookie file of `mode`.
    #[cfg(feature = "cluster")]
    fn listening(dir: &std::path::Path, mode: u32) -> LinkFile {
        use std::os::unix::fs::PermissionsExt as _;
        let cookie = dir.join(format!("cookie-{mode:o}"));
        std::fs::write(&cookie, "0123456789abcdef0123456789abcdef0123").expect("cookie");
        std::fs::set_permissions(&cookie, std::fs::Permissions::from_mode(mode)).expect("mode");
        LinkFile {
            cluster_listen: Some("127.0.0.1:4100".to_owned()),
            cookie_file: Some(cookie),
            ..keyed(dir)
        }
    }

    #[cfg(feature = "cluster")]
    #[test]
    fn a_cluster_remote_domain_is_checked_before_anything_opens() {
        let dir = temp("cluster-on");
        let link = listening(&dir, 0o600);
        let setup = LinkSetup::resolve(
            &link,
            &[cluster("roster", "127.0.0.1:4200")],
            None,
            false,
            false,
        )
        .expect("a valid cluster remote domain");
        assert!(setup.is_remote("roster"));
        assert_eq!(setup.remote_node("roster"), Some("node-b"));
        assert!(!setup.is_remote("billing"));

        let with_url = RemoteDomainFile {
            url: Some("http://127.0.0.1:1/mcp".to_owned()),
            ..cluster("roster", "127.0.0.1:4200")
        };
        let error = refused(&link, &[with_url], None);
        assert!(error.contains("`[[remote_domain]] url`"), "{error}");
        let addressless = RemoteDomainFile {
            addr: None,
            ..cluster("roster", "127.0.0.1:4200")
        };
        let error = refused(&link, &[addressless], None);
        assert!(error.contains("`[[remote_domain]] addr`"), "{error}");
        let error = refused(&link, &[cluster("roster", "node-b:4200")], None);
        assert!(error.contains("`[[remote_domain]] addr`"), "{error}");
        let mut mcp = remote("roster", "mcp");
        mcp.addr = Some("127.0.0.1:4200".to_owned());
        let error = refused(&link, &[mcp], None);
        assert!(error.contains("`[[remote_domain]] addr`"), "{error}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[cfg(feature = "cluster")]
    #[test]
    fn the_cluster_keys_of_link_are_checked_before_anything_opens() {
        let dir = temp("cluster-keys");
        let domains = [cluster("roster", "127.0.0.1:4200")];
        let unlistening = keyed(&dir);
        let error = refused(&unlistening, &domains, None);
        assert!(error.contains("`[link] cluster_listen`"), "{error}");
        let cookieless = LinkFile {
            cookie_file: None,
            ..listening(&dir, 0o600)
        };
        let error = refused(&cookieless, &domains, None);
        assert!(error.contains("`[link] cookie_file`"), "{error}");
        let error = refused(&listening(&dir, 0o644), &domains, None);
        assert!(error.contains("`[link] cookie_file`"), "{error}");
        assert!(error.contains("chmod 600"), "{error}");
        let unparsed = LinkFile {
            cluster_listen: Some("anywhere".to_owned()),
            ..listening(&dir, 0o600)
        };
        let error = refused(&unparsed, &domains, None);
        assert!(error.contains("`[link] cluster_listen`"), "{error}");
        let hasty = LinkFile {
            cluster_health_every: Some("soon".to_owned()),
            ..listening(&dir, 0o600)
        };
        let error = refused(&hasty, &domains, None);
        assert!(error.contains("`[link] cluster_health_every`"), "{error}");
        let zero = LinkFile {
            cluster_health_deadline: Some("0s".to_owned()),
            ..listening(&dir, 0o600)
        };
        let error = refused(&zero, &domains, None);
        assert!(
            error.contains("`[link] cluster_health_deadline`"),
            "{error}"
        );
        let error = refused(&listening(&dir, 0o600), &[], None);
        assert!(error.contains("serves nothing"), "{error}");
        let stray = LinkFile {
            cookie_file: Some(dir.join("cluster.cookie")),
            ..keyed(&dir)
        };
        let error = refused(&stray, &[], None);
        assert!(error.contains("`[link] cookie_file`"), "{error}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
