//! [`Database`]: a store's pool of connections, on a small runtime of its own, callable from
//! synchronous code on any thread.
//!
//! The store traits (`AuditStore`, `ProposalStore`, `IdempotencyStore`, `RunStore`) are
//! synchronous: their first backends were memory and SQLite, where a call is a lock or a local
//! commit, and the registry calls them inline on its call path. A PostgreSQL call is a network
//! round trip on an async client. Rather than make every caller async, each PostgreSQL store
//! owns one runtime thread that drives its connections; a synchronous call
//! ([`Database::call`]) hands its future to that runtime and waits for the answer, at most the
//! call timeout. The caller's thread blocks for one round trip, as it blocks for a SQLite
//! commit, and it works from any thread: a plain one, the audit writer's, or a worker of any
//! tokio runtime (a current-thread one included), because the connection is never driven by
//! the caller's runtime. Async code awaits [`Database::run`] instead, which does not block.
//!
//! What must not happen: a synchronous call made *from the store's own runtime* (inside a
//! future passed to `call` or `run`) would wait on itself. Store code only ever calls the
//! client there.

use std::{future::Future, sync::Arc, time::Duration};

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio::runtime::{Handle, Runtime};

use crate::{
    error::{OpenError, QueryError},
    health::Health,
    listen::Listener,
    options::{PostgresOptions, Target, first_host},
    schema::{MigrateError, Schema, migrate_to},
};

/// A store's connections to its database, migrated to its schema. Cheap to clone: clones
/// share the pool, the runtime and the listener.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    runtime: OwnedRuntime,
    target: Target,
    call_timeout: Duration,
    client_config: tokio_postgres::Config,
    listener: std::sync::OnceLock<Listener>,
    /// Whether the database answers, shared with every `Database` on the same target.
    health: Arc<Health>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("target", &self.inner.target)
            .field("call_timeout", &self.inner.call_timeout)
            .finish_non_exhaustive()
    }
}

impl Database {
    /// Connects to the database `options` name and brings `schema`'s tables to this build's
    /// version. Blocks until then (at most the connect timeout plus a minute for the
    /// migrations); call it at startup, from any thread.
    pub fn open(options: &PostgresOptions, schema: &'static Schema) -> Result<Self, OpenError> {
        Self::open_at(options, schema, schema.version())
    }

    /// [`Database::open`], migrating only to `version` (at most [`Schema::version`]): for
    /// tests that check migrating from every earlier version.
    pub fn open_at(
        options: &PostgresOptions,
        schema: &'static Schema,
        version: i64,
    ) -> Result<Self, OpenError> {
        let target = options.target();
        let config = options.client_config()?;
        let address = first_host(&config);
        let runtime = OwnedRuntime::new(schema.store).map_err(|error| OpenError::Other {
            store: schema.store,
            target: target.clone(),
            reason: format!("cannot start the store's runtime thread: {error}"),
        })?;
        let manager = Manager::from_config(
            config.clone(),
            tokio_postgres::NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(options.call_timeout))
            .create_timeout(Some(options.connect_timeout))
            .recycle_timeout(Some(options.connect_timeout))
            .build()
            .map_err(|error| OpenError::Other {
                store: schema.store,
                target: target.clone(),
                reason: error.to_string(),
            })?;
        let database = Self {
            inner: Arc::new(Inner {
                pool,
                runtime,
                target: target.clone(),
                call_timeout: options.call_timeout,
                client_config: config,
                listener: std::sync::OnceLock::new(),
                health: Health::of(&target),
            }),
        };
        let url = options.url_for_scrubbing().to_owned();
        let open_timeout = options.connect_timeout + Duration::from_secs(60);
        let pool = database.inner.pool.clone();
        let migrated = database.block_on(open_timeout, async move {
            let mut client = pool
                .get()
                .await
                .map_err(|error| MigrateError::Query(error.into()))?;
            let client: &mut tokio_postgres::Client = &mut client;
            migrate_to(client, schema, version).await
        });
        let classify =
            |error: &QueryError| OpenError::classify(schema.store, &target, &address, &url, error);
        match migrated {
            Ok(Ok(found)) => {
                tracing::debug!(store = schema.store, %target, version = found, "database open");
                Ok(database)
            }
            Err(error) => Err(classify(&error)),
            Ok(Err(MigrateError::Query(error))) => Err(classify(&error)),
            Ok(Err(MigrateError::TooNew(found))) => Err(OpenError::TooNew {
                store: schema.store,
                target,
                found,
                supported: schema.version(),
            }),
            Ok(Err(MigrateError::Failed { from, to, error })) => Err(OpenError::Migration {
                store: schema.store,
                target,
                from,
                to,
                reason: crate::options::scrub(&error.to_string(), &url),
            }),
        }
    }

    /// The database, as messages name it (no password).
    pub fn target(&self) -> &Target {
        &self.inner.target
    }

    /// How long one call may take.
    pub fn call_timeout(&self) -> Duration {
        self.inner.call_timeout
    }

    /// Runs `work` with a pooled connection on the store's runtime and waits for its answer,
    /// at most the call timeout (waiting for a connection included). Blocks the calling
    /// thread; see the module docs for why that is safe from any thread but the store's own.
    /// Refused at once ([`QueryError::Unresponsive`]) while a call to the same database has
    /// lately timed out (see the `health` module).
    pub fn call<T, W, F>(&self, work: W) -> Result<T, QueryError>
    where
        T: Send + 'static,
        W: FnOnce(Object) -> F + Send + 'static,
        F: Future<Output = Result<T, QueryError>> + Send + 'static,
    {
        self.admit()?;
        let pool = self.inner.pool.clone();
        let answer = self
            .block_on(self.inner.call_timeout, async move {
                let client = pool.get().await?;
                work(client).await
            })
            .and_then(|answer| answer);
        self.note(&answer);
        answer
    }

    /// [`Database::call`] for async code: awaits the answer without blocking a thread.
    pub async fn run<T, W, F>(&self, work: W) -> Result<T, QueryError>
    where
        T: Send + 'static,
        W: FnOnce(Object) -> F + Send + 'static,
        F: Future<Output = Result<T, QueryError>> + Send + 'static,
    {
        self.admit()?;
        let pool = self.inner.pool.clone();
        let timeout = self.inner.call_timeout;
        let task = self.inner.runtime.handle().spawn(async move {
            tokio::time::timeout(timeout, async move { work(pool.get().await?).await })
                .await
                .map_err(|_| QueryError::Timeout(timeout))?
        });
        let answer = task.await.map_err(|_| QueryError::Closed)?;
        self.note(&answer);
        answer
    }

    /// Refuses a call at once while the database is marked unresponsive.
    fn admit(&self) -> Result<(), QueryError> {
        let inner = &self.inner;
        inner.health.admit(&inner.client_config, inner.call_timeout)
    }

    /// Marks the database unresponsive when `answer` is a timeout, and closes the pool's idle
    /// connections: the one whose statement timed out went back to the pool still waiting on
    /// the server, and would hold up whatever ran on it next.
    fn note<T>(&self, answer: &Result<T, QueryError>) {
        let inner = &self.inner;
        if let Err(QueryError::Timeout(_)) = answer {
            inner.pool.retain(|_, _| false);
        }
        inner
            .health
            .note(answer, &inner.client_config, inner.call_timeout);
    }

    /// Runs `future` on the store's runtime and waits for it, at most `timeout`.
    fn block_on<T: Send + 'static>(
        &self,
        timeout: Duration,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, QueryError> {
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        self.inner.runtime.handle().spawn(async move {
            let outcome = tokio::time::timeout(timeout, future).await;
            // The caller may have given up; then nobody needs the answer.
            let _ = answer.send(outcome);
        });
        // The task itself times out; the margin covers a runtime too busy to notice at once.
        match answered.recv_timeout(timeout + Duration::from_secs(1)) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(_)) | Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                Err(QueryError::Timeout(timeout))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(QueryError::Closed),
        }
    }

    /// The store's runtime, for tasks of its own (a listener, a sweep).
    pub fn handle(&self) -> &Handle {
        self.inner.runtime.handle()
    }

    /// The notifications of this database's `channels` (`LISTEN`), from one dedicated
    /// connection shared by every subscriber of this `Database`, started on first use. See
    /// [`Listener`].
    pub fn listener(&self, channels: &'static [&'static str]) -> &Listener {
        self.inner.listener.get_or_init(|| {
            Listener::start(
                self.inner.runtime.handle(),
                self.inner.client_config.clone(),
                channels,
                self.inner.target.clone(),
            )
        })
    }
}

/// A runtime with one worker thread, shut down in the background when dropped (a runtime
/// dropped the ordinary way panics when the last store handle goes away inside an async
/// context).
struct OwnedRuntime(Option<Runtime>);

impl OwnedRuntime {
    fn new(store: &str) -> std::io::Result<Self> {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(format!("switchboard-postgres-{store}"))
            .enable_all()
            .build()
            .map(|runtime| Self(Some(runtime)))
    }

    fn handle(&self) -> &Handle {
        match &self.0 {
            Some(runtime) => runtime.handle(),
            None => unreachable!("the runtime is taken only by Drop"),
        }
    }
}

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}
