//! Bulkheads: how many calls of a domain run at once, and in what order waiting calls enter.

use super::*;

/// Holds the calls of one tool inside it until the test lets them out, counting how many are
/// inside at once.
struct Gate {
    inside: AtomicUsize,
    most_inside: AtomicUsize,
    left: AtomicUsize,
    exits: Semaphore,
}

impl Gate {
    fn new() -> Self {
        Self {
            inside: AtomicUsize::new(0),
            most_inside: AtomicUsize::new(0),
            left: AtomicUsize::new(0),
            exits: Semaphore::new(0),
        }
    }

    async fn pass(&self) -> Result<usize, ToolError> {
        let now_inside = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_inside.fetch_max(now_inside, Ordering::SeqCst);
        let exit = self
            .exits
            .acquire()
            .await
            .map_err(|_| ToolError::new("gate_closed", "the test closed the gate"))?;
        exit.forget();
        self.inside.fetch_sub(1, Ordering::SeqCst);
        self.left.fetch_add(1, Ordering::SeqCst);
        Ok(now_inside)
    }

    fn inside(&self) -> usize {
        self.inside.load(Ordering::SeqCst)
    }

    fn most_inside(&self) -> usize {
        self.most_inside.load(Ordering::SeqCst)
    }

    fn left(&self) -> usize {
        self.left.load(Ordering::SeqCst)
    }
}

static PAIR_GATE: LazyLock<Gate> = LazyLock::new(Gate::new);
static OCTET_GATE: LazyLock<Gate> = LazyLock::new(Gate::new);

/// Waits at the gate of the `pair` domain.
#[tool(domain = Pair, category = read, permission = "pair.use")]
async fn squeeze(_ctx: &ToolContext, _input: NoInput) -> Result<usize, ToolError> {
    PAIR_GATE.pass().await
}

/// Waits at the gate of the `octet` domain.
#[tool(domain = Octet, category = read, permission = "octet.use")]
async fn crowd(_ctx: &ToolContext, _input: NoInput) -> Result<usize, ToolError> {
    OCTET_GATE.pass().await
}

/// The correlation ids of the `single_enter` calls, in the order they entered.
static SINGLE_ENTERED: LazyLock<std::sync::Mutex<Vec<String>>> =
    LazyLock::new(|| std::sync::Mutex::new(Vec::new()));
/// One permit per `single_enter` call the test lets out.
static SINGLE_EXITS: Semaphore = Semaphore::const_new(0);

/// Notes that it entered, then waits until the test lets it out.
#[tool(domain = Single, category = read, permission = "single.use")]
async fn enter(ctx: &ToolContext, _input: NoInput) -> Result<usize, ToolError> {
    let position = {
        let mut entered = SINGLE_ENTERED
            .lock()
            .map_err(|_| ToolError::new("poisoned", "a test thread panicked"))?;
        entered.push(ctx.caller().correlation_id.as_str().to_owned());
        entered.len()
    };
    SINGLE_EXITS
        .acquire()
        .await
        .map_err(|_| ToolError::new("gate_closed", "the test closed the gate"))?
        .forget();
    Ok(position)
}

fn single_entered() -> Vec<String> {
    SINGLE_ENTERED
        .lock()
        .expect("no test thread panicked")
        .clone()
}

fn bulkhead_config() -> RegistryConfig {
    RegistryConfig {
        domain_concurrency: BTreeMap::from([
            ("pair".to_owned(), 2),
            ("octet".to_owned(), 8),
            ("single".to_owned(), 1),
        ]),
        ..RegistryConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulkhead_of_two_runs_two_calls_at_once_and_queues_the_rest() {
    let registry = start(bulkhead_config()).await;
    assert_eq!(domain_status(&registry, "pair").concurrency, 2);
    let gate = &*PAIR_GATE;
    let calls = spawn_calls(&registry, "pair_squeeze", "pair_squeeze", 6);

    // Two calls are inside at the same time: both entered, neither has left.
    wait_until("two calls are inside the pair gate", || gate.inside() == 2).await;
    assert_eq!(gate.left(), 0);
    // Give the other four every chance to get in, were the bulkhead leaky.
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(gate.inside(), 2, "a third call got past a bulkhead of two");
    assert_eq!(domain_status(&registry, "pair").in_flight, 2);

    // Let them out one by one: each exit lets exactly one waiting call in.
    for released in 1..=6 {
        gate.exits.add_permits(1);
        wait_until("the released call has left", || gate.left() == released).await;
        assert!(
            gate.inside() <= 2,
            "{} calls inside a bulkhead of two",
            gate.inside()
        );
    }
    join_calls(calls).await;
    assert_eq!(gate.most_inside(), 2, "at most two calls ran at once");
    assert_eq!(domain_status(&registry, "pair").in_flight, 0);
    let audited = registry
        .audit()
        .query(&AuditQuery::all().tool("pair_squeeze"))
        .await
        .expect("the in-memory store answers every query");
    assert_eq!(audited.len(), 6);
    assert!(audited.iter().all(|record| record.outcome == Outcome::Ok));
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulkhead_of_eight_runs_eight_calls_at_once() {
    let registry = start(bulkhead_config()).await;
    assert_eq!(domain_status(&registry, "octet").concurrency, 8);
    let gate = &*OCTET_GATE;
    let calls = spawn_calls(&registry, "octet_crowd", "octet_crowd", 8);

    // All eight are inside together: calls into one domain do not run one at a time.
    wait_until("eight calls are inside the octet gate", || {
        gate.inside() == 8
    })
    .await;
    assert_eq!(gate.left(), 0);
    assert_eq!(domain_status(&registry, "octet").in_flight, 8);

    gate.exits.add_permits(8);
    join_calls(calls).await;
    assert_eq!(gate.most_inside(), 8);
    assert_eq!(domain_status(&registry, "octet").in_flight, 0);
    registry.shutdown().await;
}

/// Calls waiting for a domain's bulkhead get their permits in the order they started waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_calls_enter_a_full_bulkhead_in_arrival_order() {
    let registry = start(bulkhead_config()).await;
    let mut calls = Vec::new();
    for index in 0..4 {
        calls.extend(spawn_calls(
            &registry,
            "single_enter",
            &format!("fifo{index}"),
            1,
        ));
        if index == 0 {
            wait_until("the first call is inside", || single_entered().len() == 1).await;
        } else {
            // Time for the call to reach the bulkhead and queue there.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    assert_eq!(
        single_entered().len(),
        1,
        "a bulkhead of one let a second call in"
    );
    for released in 1..=4 {
        SINGLE_EXITS.add_permits(1);
        wait_until("the next call is inside", || {
            single_entered().len() == (released + 1).min(4)
        })
        .await;
    }
    join_calls(calls).await;
    assert_eq!(
        single_entered(),
        ["fifo0-0", "fifo1-0", "fifo2-0", "fifo3-0"]
    );
    registry.shutdown().await;
}
