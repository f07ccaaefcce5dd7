//! Domains served by other nodes, and the peers this node serves: the config file's `[link]`
//! table and its `[[remote_domain]]` entries (docs/deploy.md, "Domains on other nodes").
//!
//! - A **front node** lists each domain another node serves as a `[[remote_domain]]` (`name`,
//!   `link = "mcp"`, `url`, `node`, `bearer_token_env`, `health_every`, `health_deadline`,
//!   `start_timeout`, `cool_down`) and signs the identity statement of every call it hands
//!   over with the first key of `[link] signing_key_files`, as `[link] node`. Each remote
//!   domain gets an [`McpDomainLink`], registered with `RegistryBuilder::remote_domain`: the
//!   registry keeps the domain's tools and checks, and opens no state for it (a remote roster
//!   opens no roster store here).
//! - A **serving node** lists the nodes whose statements it accepts as `[[link.peer]]`
//!   (`name`, `public_key_files`); `serve --http` then verifies, as `[link] node`, the
//!   statements of the peer sessions its token file maps (`peer = "NAME"`).
//!
//! Every mistake is a usage error naming the key and what to change, found before anything
//! opens: a name that is not a linked domain, a remote domain this node also serves, a remote
//! domain without `[link] node` or signing keys, a key file that does not parse, a bearer
//! token variable that is not set. A remote node that does not answer at start leaves its
//! domain registered with its link open (calls answer `domain_unavailable` until it answers),
//! unless `[link] strict_remote` or `--strict-remote` refuses to run instead.
//!
//! With the `cluster` feature, `link = "cluster"` (`node`, `addr`) and the `[link]` cluster keys
//! reach domains through `ractor_cluster` instead ([`crate::cluster_setup`]).
//!
//! `switchboard link-key new PATH` ([`new_key`]) writes a fresh signing key and its public key.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use anyhow::Context as _;
use serde::Deserialize;
use switchboard::RegistryBuilder;
use switchboard_link::{SigningKeys, StatementSigner, StatementVerifier, VerifyingKeys};
use switchboard_mounts::{DomainLinkConfig, McpDomainLink};

use crate::{
    app::{Exit, UsageError},
    args::LinkKeyArgs,
    cluster_setup::{ClusterKeys, ClusterRemote, ClusterRemoteKeys, ClusterSetup},
    config_file::parse_age,
    output, served_domains,
};

/// The link kinds `[[remote_domain]] link` can name, as the CLI builds them.
const MCP: &str = "mcp";
const CLUSTER: &str = "cluster";

/// The `[link]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LinkFile {
    /// This node's name: the issuer of the statements it signs and the audience of those it
    /// accepts (`<node>/<domain>`).
    pub(crate) node: Option<String>,
    /// PKCS#8 PEM Ed25519 private keys; the first signs, the others are kept for rotation.
    #[serde(default)]
    pub(crate) signing_key_files: Vec<PathBuf>,
    /// Refuse to run when a remote domain's node does not answer at start.
    #[serde(default)]
    pub(crate) strict_remote: bool,
    /// `[[link.peer]]`: the nodes whose statements this node accepts.
    #[serde(default, rename = "peer")]
    pub(crate) peers: Vec<PeerFile>,
    /// The cluster link: where this node's cluster server listens (`10.0.0.1:4100`).
    pub(crate) cluster_listen: Option<String>,
    /// The cluster link: the file holding the cluster's shared secret.
    pub(crate) cookie_file: Option<PathBuf>,
    /// The cluster link: how often each cluster remote domain is pinged (`2s`).
    pub(crate) cluster_health_every: Option<String>,
    /// The cluster link: how long a ping may take before the link's breaker opens (`1s`).
    pub(crate) cluster_health_deadline: Option<String>,
    /// The cluster link: how long the links may take to answer a first ping at start (`5s`).
    pub(crate) cluster_start_timeout: Option<String>,
}

/// One `[[link.peer]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PeerFile {
    /// The peer's node name, as its `[link] node` and the token file's `peer = "NAME"` say.
    pub(crate) name: String,
    /// Its SPKI PEM Ed25519 public keys (every one opens).
    pub(crate) public_key_files: Vec<PathBuf>,
}

/// One `[[remote_domain]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RemoteDomainFile {
    /// The linked domain served by the other node.
    pub(crate) name: String,
    /// How it is reached: `mcp` or `cluster`.
    pub(crate) link: String,
    /// The other node's MCP endpoint (`http://…/mcp` or `https://…/mcp`), for `mcp`.
    pub(crate) url: Option<String>,
    /// The other node's `[link] cluster_listen` address, for `cluster`.
    pub(crate) addr: Option<String>,
    /// The variable holding the bearer token the other node maps to this node (a `peer`
    /// entry of its token file).
    pub(crate) bearer_token_env: Option<String>,
    /// The other node's name (its `[link] node`).
    pub(crate) node: String,
    /// How often the other node is pinged (`2s`).
    pub(crate) health_every: Option<String>,
    /// How long a ping may take before the connection counts as lost (`1s`).
    pub(crate) health_deadline: Option<String>,
    /// How long the first connection may take at start (`5s`).
    pub(crate) start_timeout: Option<String>,
    /// How long a node lost too often is left alone (`5s`).
    pub(crate) cool_down: Option<String>,
}

/// `[link]` and `[[remote_domain]]`, checked.
#[derive(Debug, Default)]
pub(crate) struct LinkSetup {
    /// Verifies the statements of peer sessions (`serve --http`), when peers are listed.
    verifier: Option<Arc<StatementVerifier>>,
    /// Signs the statements of calls to remote domains, when there are any.
    signer: Option<Arc<StatementSigner>>,
    /// The remote domains, in the file's order.
    remote: Vec<DomainLinkConfig>,
    /// Refuse to run when a remote domain's node does not answer at start.
    strict: bool,
    /// The cluster link, when the config file sets it up.
    cluster: ClusterSetup,
}

impl LinkSetup {
    /// Checks the config file's `[link]` and `[[remote_domain]]` and reads the keys they
    /// name. `served`: the domains `serve --domains` names, if given (a remote domain may not
    /// be one of them). `strict_flag`: `--strict-remote`. `serving`: the command is `serve`
    /// (only it serves the cluster peers' calls).
    pub(crate) fn resolve(
        link: &LinkFile,
        remote: &[RemoteDomainFile],
        served: Option<&[String]>,
        strict_flag: bool,
        serving: bool,
    ) -> Result<Self, UsageError> {
        let node = match &link.node {
            Some(node) if node.trim().is_empty() => {
                return Err(UsageError::new(
                    "`[link] node` in the config file is empty: name this node (e.g. \
                     `node = \"node-a\"`)",
                ));
            }
            node => node.clone(),
        };
        let verifier = verifier(node.as_deref(), &link.peers)?;
        let mut configs: Vec<DomainLinkConfig> = Vec::with_capacity(remote.len());
        let mut cluster_remote: Vec<ClusterRemote> = Vec::new();
        let mut names: Vec<&str> = Vec::with_capacity(remote.len());
        for entry in remote {
            check_remote_name(entry, served)?;
            if names.contains(&entry.name.as_str()) {
                return Err(UsageError::new(format!(
                    "`[[remote_domain]] name = \"{}\"` is given twice in the config file: a \
                     domain is served by one node; keep one entry",
                    entry.name
                )));
            }
            names.push(&entry.name);
            match entry.link.as_str() {
                MCP => configs.push(remote_config(entry)?),
                CLUSTER => cluster_remote.push(crate::cluster_setup::remote(ClusterRemoteKeys {
                    name: &entry.name,
                    node: &entry.node,
                    addr: entry.addr.as_deref(),
                    mcp_keys: &mcp_keys(entry),
                })?),
                other => {
                    return Err(UsageError::new(format!(
                        "`[[remote_domain]] link` of `{}` in the config file: `{other}` is not \
                         a link kind; use `link = \"mcp\"` or `link = \"cluster\"`",
                        entry.name
                    )));
                }
            }
        }
        let any_remote = !configs.is_empty() || !cluster_remote.is_empty();
        let cluster = ClusterSetup::resolve(
            ClusterKeys {
                listen: link.cluster_listen.as_deref(),
                cookie_file: link.cookie_file.as_ref(),
                health_every: link.cluster_health_every.as_deref(),
                health_deadline: link.cluster_health_deadline.as_deref(),
                start_timeout: link.cluster_start_timeout.as_deref(),
            },
            node.as_deref(),
            cluster_remote,
            verifier.as_ref(),
            serving,
        )?;
        let signer = if !any_remote {
            None
        } else {
            Some(Arc::new(signer(node.as_deref(), &link.signing_key_files)?))
        };
        Ok(Self {
            verifier,
            signer,
            remote: configs,
            strict: link.strict_remote || strict_flag,
            cluster,
        })
    }

    /// Whether `domain` is served by another node.
    pub(crate) fn is_remote(&self, domain: &str) -> bool {
        self.remote_node(domain).is_some()
    }

    /// The node that serves `domain`, when another node does.
    pub(crate) fn remote_node(&self, domain: &str) -> Option<&str> {
        self.remote
            .iter()
            .find(|config| config.domain == domain)
            .map(|config| config.node.as_str())
            .or_else(|| self.cluster.remote_node(domain))
    }

    /// The verifier of peer sessions' statements, when `[[link.peer]]` lists peers.
    pub(crate) fn verifier(&self) -> Option<Arc<StatementVerifier>> {
        self.verifier.clone()
    }

    /// Starts one link per remote domain. A node that does not answer within its start
    /// timeout leaves its link open, or, when strict, stops the run (closing what started).
    pub(crate) async fn start(&self) -> anyhow::Result<RemoteLinks> {
        let mut links = RemoteLinks::default();
        #[cfg(feature = "cluster")]
        {
            links.cluster = self
                .cluster
                .start(self.signer.as_ref(), self.strict)
                .await?;
        }
        let Some(signer) = &self.signer else {
            return Ok(links);
        };
        for config in &self.remote {
            let started = McpDomainLink::start(config.clone(), Arc::clone(signer)).await;
            let link = match started {
                Ok(link) => Arc::new(link),
                Err(error) => {
                    links.close().await;
                    return Err(error).with_context(|| {
                        format!(
                            "the link to the remote domain `{}` ({}) did not start",
                            config.domain, config.node
                        )
                    });
                }
            };
            let health = switchboard::registry::DomainLink::health(&*link);
            links.mcp.push(link);
            if let switchboard::registry::LinkHealth::Open { reason } = health {
                if self.strict {
                    links.close().await;
                    anyhow::bail!(
                        "the remote domain `{}` is not reachable at start ({reason}); \
                         --strict-remote (or `[link] strict_remote`) refuses to run without it",
                        config.domain
                    );
                }
                tracing::warn!(
                    domain = %config.domain,
                    node = %config.node,
                    "the remote domain is not reachable at start ({reason}); its calls answer \
                     domain_unavailable until its node answers"
                );
            }
        }
        Ok(links)
    }
}

/// The links to remote domains, started.
#[derive(Debug, Default)]
pub(crate) struct RemoteLinks {
    mcp: Vec<Arc<McpDomainLink>>,
    /// The cluster node and its links: dropped with these links, after the registry's run.
    #[cfg(feature = "cluster")]
    cluster: Option<crate::cluster_setup::ClusterLinks>,
}

impl RemoteLinks {
    /// `builder` serving each remote domain through its link (and, on a cluster serving
    /// node, the peers' calls).
    pub(crate) fn register(&self, mut builder: RegistryBuilder) -> RegistryBuilder {
        for link in &self.mcp {
            builder = builder.remote_domain(link.config().domain.clone(), Arc::clone(link) as _);
        }
        #[cfg(feature = "cluster")]
        if let Some(cluster) = &self.cluster {
            builder = cluster.register(builder);
        }
        builder
    }

    /// Closes every MCP link; calls are refused from then on. The cluster node stops when
    /// these links are dropped.
    pub(crate) async fn close(&self) {
        for link in &self.mcp {
            link.close().await;
        }
    }
}

/// The verifier of the listed peers' statements, as `node`.
fn verifier(
    node: Option<&str>,
    peers: &[PeerFile],
) -> Result<Option<Arc<StatementVerifier>>, UsageError> {
    if peers.is_empty() {
        return Ok(None);
    }
    let Some(node) = node else {
        return Err(UsageError::new(
            "`[[link.peer]]` in the config file needs `[link] node`: the name of this node, \
             which the peers' statements are addressed to",
        ));
    };
    let mut verifier = StatementVerifier::new(node);
    let mut seen: Vec<&str> = Vec::new();
    for peer in peers {
        if peer.name.trim().is_empty() {
            return Err(UsageError::new(
                "`[[link.peer]] name` in the config file is empty: name the peer node",
            ));
        }
        if seen.contains(&peer.name.as_str()) {
            return Err(UsageError::new(format!(
                "`[[link.peer]] name = \"{}\"` is given twice in the config file: list every \
                 public key of a peer in one entry",
                peer.name
            )));
        }
        seen.push(&peer.name);
        if peer.public_key_files.is_empty() {
            return Err(UsageError::new(format!(
                "`[[link.peer]] public_key_files` of the peer `{}` is empty: list its public \
                 key files (`switchboard link-key new` writes one as PATH.pub)",
                peer.name
            )));
        }
        let keys = VerifyingKeys::from_pem_files(&peer.public_key_files).map_err(|error| {
            UsageError::new(format!(
                "`[[link.peer]] public_key_files` of the peer `{}` in the config file: {error}",
                peer.name
            ))
        })?;
        verifier = verifier.peer(peer.name.clone(), keys);
    }
    Ok(Some(Arc::new(verifier)))
}

/// The signer of the statements of calls to remote domains, as `node`.
fn signer(node: Option<&str>, files: &[PathBuf]) -> Result<StatementSigner, UsageError> {
    let Some(node) = node else {
        return Err(UsageError::new(
            "`[[remote_domain]]` in the config file needs `[link] node`: the name of this \
             node, which signs the identity statement of every call it hands over",
        ));
    };
    if files.is_empty() {
        return Err(UsageError::new(
            "`[[remote_domain]]` in the config file needs `[link] signing_key_files`: the \
             Ed25519 key that signs each call's identity statement (make one with \
             `switchboard link-key new PATH`)",
        ));
    }
    let keys = SigningKeys::from_pem_files(files).map_err(|error| {
        UsageError::new(format!(
            "`[link] signing_key_files` in the config file: {error}"
        ))
    })?;
    Ok(StatementSigner::new(node, keys))
}

/// The keys of an MCP link a `[[remote_domain]]` entry gives, by name.
fn mcp_keys(entry: &RemoteDomainFile) -> Vec<&'static str> {
    [
        ("url", entry.url.is_some()),
        ("bearer_token_env", entry.bearer_token_env.is_some()),
        ("health_every", entry.health_every.is_some()),
        ("health_deadline", entry.health_deadline.is_some()),
        ("start_timeout", entry.start_timeout.is_some()),
        ("cool_down", entry.cool_down.is_some()),
    ]
    .into_iter()
    .filter_map(|(key, given)| given.then_some(key))
    .collect()
}

/// A `[[remote_domain]] name`, checked: a linked domain this node does not serve itself.
fn check_remote_name(
    entry: &RemoteDomainFile,
    served: Option<&[String]>,
) -> Result<(), UsageError> {
    let name = entry.name.as_str();
    served_domains::check_known(name, "`[[remote_domain]] name` in the config file")?;
    if served_domains::ALWAYS_SERVED.contains(&name) {
        return Err(UsageError::new(format!(
            "`[[remote_domain]] name = \"{name}\"` in the config file: `{name}` is always \
             served by the node itself; it cannot be a remote domain"
        )));
    }
    if served.is_some_and(|served| served.iter().any(|domain| domain == name)) {
        return Err(UsageError::new(format!(
            "`{name}` is both served here (--domains) and a remote domain \
             (`[[remote_domain]] name = \"{name}\"` in the config file): a domain is served by \
             one node; drop one of them"
        )));
    }
    Ok(())
}

/// One `[[remote_domain]] link = "mcp"` entry, checked.
fn remote_config(entry: &RemoteDomainFile) -> Result<DomainLinkConfig, UsageError> {
    let name = entry.name.as_str();
    let key = |field: &str| format!("`[[remote_domain]] {field}` of `{name}` in the config file");
    if entry.addr.is_some() {
        return Err(UsageError::new(format!(
            "{} belongs to `link = \"cluster\"`: an MCP link takes `url`",
            key("addr")
        )));
    }
    let Some(url) = &entry.url else {
        return Err(UsageError::new(format!(
            "{} is missing: give the other node's MCP endpoint (`http://…/mcp`)",
            key("url")
        )));
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(UsageError::new(format!(
            "{}: `{url}` is not an http:// or https:// URL of the other node's MCP endpoint",
            key("url"),
        )));
    }
    if entry.node.trim().is_empty() {
        return Err(UsageError::new(format!(
            "{} is empty: name the node that serves the domain (its `[link] node`)",
            key("node")
        )));
    }
    let mut config = DomainLinkConfig::new(name, url.clone(), entry.node.clone());
    if let Some(variable) = &entry.bearer_token_env {
        if std::env::var_os(variable).is_none() {
            return Err(UsageError::new(format!(
                "{}: the variable `{variable}` is not set; set it to the bearer token the node \
                 `{}` maps to this node",
                key("bearer_token_env"),
                entry.node
            )));
        }
        config = config.bearer_token_env(variable.clone());
    }
    let age = |field: &str, text: Option<&str>| -> Result<Option<Duration>, UsageError> {
        text.map(|text| match parse_age(text) {
            Ok(age) if age.is_zero() => Err(UsageError::new(format!(
                "{}: must be longer than zero",
                key(field)
            ))),
            Ok(age) => Ok(age),
            Err(error) => Err(UsageError::new(format!("{}: {error}", key(field)))),
        })
        .transpose()
    };
    let every = age("health_every", entry.health_every.as_deref())?;
    let deadline = age("health_deadline", entry.health_deadline.as_deref())?;
    if every.is_some() || deadline.is_some() {
        config = config.health_checks(
            every.unwrap_or(switchboard_mounts::DEFAULT_PING_EVERY),
            deadline.unwrap_or(switchboard_mounts::DEFAULT_PING_DEADLINE),
        );
    }
    if let Some(timeout) = age("start_timeout", entry.start_timeout.as_deref())? {
        config = config.start_timeout(timeout);
    }
    if let Some(cool_down) = age("cool_down", entry.cool_down.as_deref())? {
        config = config.cool_down(cool_down);
    }
    Ok(config)
}

/// `switchboard link-key new PATH`: writes a fresh Ed25519 private key to PATH (PKCS#8 PEM,
/// mode 0600) and its public key to PATH.pub (SPKI PEM), refusing to overwrite either.
pub(crate) fn new_key(args: &LinkKeyArgs) -> anyhow::Result<Exit> {
    let crate::args::LinkKeyAction::New { path } = &args.action;
    let public = public_path(path);
    for existing in [path.as_path(), public.as_path()] {
        if existing.exists() {
            return Err(UsageError::new(format!(
                "{} exists already: link-key new never overwrites a key; pick another PATH or \
                 remove it",
                existing.display()
            ))
            .into());
        }
    }
    let private_pem =
        switchboard_link::generate_signing_key_pem().context("could not generate a key")?;
    let keys = SigningKeys::from_pems(&[private_pem.as_bytes()])
        .context("the generated key does not read back")?;
    let public_pem = keys.verifying_keys().to_pems().concat();
    write_new(path, private_pem.as_bytes(), 0o600)?;
    write_new(&public, public_pem.as_bytes(), 0o644)?;
    output::write_stdout(&format!(
        "wrote the signing key {} (keep it secret; list it first in `[link] signing_key_files`) \
         and its public key {} (list it in `[[link.peer]] public_key_files` on the nodes that \
         serve this node's remote domains)\n",
        path.display(),
        public.display()
    ));
    Ok(Exit::Success)
}

/// Where `link-key new PATH` writes the public key: PATH.pub.
fn public_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

/// Writes `bytes` to a file that must not exist yet, created with `mode`.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut file = options
        .open(path)
        .map_err(|error| UsageError::new(format!("cannot create {}: {error}", path.display())))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("could not write {}", path.display()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // The sample domains, linked as in the binary.
    use switchboard_domains as _;

    pub(crate) fn remote(name: &str, link: &str) -> RemoteDomainFile {
        RemoteDomainFile {
            name: name.to_owned(),
            link: link.to_owned(),
            url: Some("http://127.0.0.1:1/mcp".to_owned()),
            addr: None,
            bearer_token_env: None,
            node: "node-b".to_owned(),
            health_every: Some("2s".to_owned()),
            health_deadline: Some("1s".to_owned()),
            start_timeout: None,
            cool_down: None,
        }
    }

    pub(crate) fn keyed(dir: &Path) -> LinkFile {
        let path = dir.join("a.pem");
        if !path.exists() {
            let pem = switchboard_link::generate_signing_key_pem().expect("key");
            std::fs::write(&path, pem).expect("write key");
        }
        LinkFile {
            node: Some("node-a".to_owned()),
            signing_key_files: vec![path],
            ..LinkFile::default()
        }
    }

    pub(crate) fn temp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("switchboard-link-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    pub(crate) fn refused(
        link: &LinkFile,
        remote: &[RemoteDomainFile],
        served: Option<&[String]>,
    ) -> String {
        LinkSetup::resolve(link, remote, served, false, false)
            .expect_err("refused")
            .to_string()
    }

    #[test]
    fn a_remote_domain_is_checked_before_anything_opens() {
        let dir = temp("checked");
        let link = keyed(&dir);
        let setup = LinkSetup::resolve(&link, &[remote("roster", "mcp")], None, false, false)
            .expect("a valid remote domain");
        assert!(setup.is_remote("roster"));
        assert!(!setup.is_remote("billing"));
        assert_eq!(setup.remote[0].ping_every, Duration::from_secs(2));
        assert_eq!(setup.remote[0].ping_deadline, Duration::from_secs(1));

        let typo = refused(&link, &[remote("rostr", "mcp")], None);
        assert!(typo.contains("did you mean `roster`"), "{typo}");
        assert!(typo.contains("[[remote_domain]] name"), "{typo}");
        let core = refused(&link, &[remote("core", "mcp")], None);
        assert!(core.contains("always"), "{core}");
        let both = refused(
            &link,
            &[remote("roster", "mcp")],
            Some(&["roster".to_owned()]),
        );
        assert!(both.contains("both served here"), "{both}");
        let kind = refused(&link, &[remote("roster", "carrier-pigeon")], None);
        assert!(kind.contains("[[remote_domain]] link"), "{kind}");
        let twice = refused(
            &link,
            &[remote("roster", "mcp"), remote("roster", "mcp")],
            None,
        );
        assert!(twice.contains("twice"), "{twice}");
        let mut slow = remote("roster", "mcp");
        slow.health_every = Some("soon".to_owned());
        let slow = refused(&link, &[slow], None);
        assert!(slow.contains("health_every"), "{slow}");
        let mut unset = remote("roster", "mcp");
        unset.bearer_token_env = Some("SWITCHBOARD_TEST_NEVER_SET_TOKEN".to_owned());
        let unset = refused(&link, &[unset], None);
        assert!(unset.contains("bearer_token_env"), "{unset}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_remote_domain_needs_this_nodes_name_and_a_key_that_parses() {
        let dir = temp("keys");
        let nameless = LinkFile {
            node: None,
            ..keyed(&dir)
        };
        let error = refused(&nameless, &[remote("roster", "mcp")], None);
        assert!(error.contains("[link] node"), "{error}");
        let keyless = LinkFile {
            signing_key_files: Vec::new(),
            ..keyed(&dir)
        };
        let error = refused(&keyless, &[remote("roster", "mcp")], None);
        assert!(error.contains("signing_key_files"), "{error}");
        let garbage = dir.join("garbage.pem");
        std::fs::write(&garbage, "not a key").expect("write");
        let broken = LinkFile {
            signing_key_files: vec![garbage],
            ..keyed(&dir)
        };
        let error = refused(&broken, &[remote("roster", "mcp")], None);
        assert!(error.contains("garbage.pem"), "{error}");
        // No remote domain: no key needed.
        assert!(LinkSetup::resolve(&keyless, &[], None, false, false).is_ok());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn peers_need_this_nodes_name_and_public_keys_that_parse() {
        let dir = temp("peers");
        let pem = switchboard_link::generate_signing_key_pem().expect("key");
        let keys = SigningKeys::from_pems(&[pem.as_bytes()]).expect("keys");
        let public = dir.join("a.pem.pub");
        std::fs::write(&public, keys.verifying_keys().to_pems().concat()).expect("write");
        let peer = |files: Vec<PathBuf>| PeerFile {
            name: "node-a".to_owned(),
            public_key_files: files,
        };
        let serving = LinkFile {
            node: Some("node-b".to_owned()),
            peers: vec![peer(vec![public.clone()])],
            ..LinkFile::default()
        };
        let setup = LinkSetup::resolve(&serving, &[], None, false, false).expect("a valid peer");
        assert!(
            setup
                .verifier()
                .is_some_and(|verifier| verifier.knows("node-a"))
        );
        let nameless = LinkFile {
            node: None,
            peers: vec![peer(vec![public.clone()])],
            ..LinkFile::default()
        };
        assert!(refused(&nameless, &[], None).contains("[link] node"));
        let missing = LinkFile {
            node: Some("node-b".to_owned()),
            peers: vec![peer(vec![dir.join("absent.pub")])],
            ..LinkFile::default()
        };
        let error = refused(&missing, &[], None);
        assert!(error.contains("absent.pub"), "{error}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_new_key_is_private_and_never_overwrites() {
        let dir = temp("new-key");
        let path = dir.join("node-a.pem");
        let args = LinkKeyArgs {
            action: crate::args::LinkKeyAction::New { path: path.clone() },
        };
        assert_eq!(new_key(&args).expect("written"), Exit::Success);
        let private = std::fs::read(&path).expect("private key");
        let public = std::fs::read(dir.join("node-a.pem.pub")).expect("public key");
        let keys = SigningKeys::from_pems(&[&private]).expect("a signing key");
        let read = VerifyingKeys::from_pems(&[&public]).expect("a public key");
        assert_eq!(keys.verifying_keys().to_pems(), read.to_pems());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = new_key(&args).expect_err("refused");
        assert!(again.to_string().contains("exists already"), "{again}");
        assert_eq!(std::fs::read(&path).expect("kept"), private);
        let _ = std::fs::remove_dir_all(dir);
    }
}
