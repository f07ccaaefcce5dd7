//! The node kinds: what one execution of each does, its retries, and its failure strategy.

use super::*;

impl Run<'_> {
    /// Runs `block` from its first node, each node's step under `prefix`.
    pub(super) fn run_block<'a>(
        &'a self,
        block: &'a Block,
        prefix: Option<&'a NodePath>,
        iteration: u32,
        mut scope: Scope,
    ) -> BoxFuture<'a, Result<Flow, Stop>> {
        async move {
            let mut current = block.nodes.first();
            let mut last_output = Value::Null;
            while let Some(node) = current {
                let path = match prefix {
                    Some(prefix) => prefix.child(node.id.as_str()),
                    None => NodePath::root(&node.id),
                };
                let next = match self.exec_node(node, path, iteration, &scope).await? {
                    NodeDone::End(output) => return Ok(Flow::End(output)),
                    NodeDone::Goto(id) => Some(id),
                    NodeDone::Output {
                        params,
                        output,
                        next,
                    } => {
                        if let Some(Value::Object(steps)) = scope.get_mut("steps") {
                            steps.insert(
                                node.id.to_string(),
                                json!({ "params": params, "output": output }),
                            );
                        }
                        last_output = output;
                        next.unwrap_or_else(|| node.next.clone())
                    }
                };
                current = next.and_then(|id| block.node(&id));
            }
            Ok(Flow::Done(last_output, Box::new(scope)))
        }
        .boxed()
    }

    fn exec_node<'a>(
        &'a self,
        node: &'a Node,
        path: NodePath,
        iteration: u32,
        scope: &'a Scope,
    ) -> BoxFuture<'a, Result<NodeDone, Stop>> {
        let span = tracing::info_span!(
            "workflow.step",
            run = %self.id,
            path = %path,
            iteration,
            attempt = tracing::field::Empty,
        );
        async move {
            let stored = self.stored(&path, iteration);
            let state = stored
                .as_ref()
                .map_or(NodeState::Pending, |step| step.state.clone());
            match (&state, stored.as_ref()) {
                (
                    NodeState::Completed
                    | NodeState::Compensating
                    | NodeState::Compensated
                    | NodeState::CompensationFailed { .. },
                    Some(step),
                ) => {
                    let output = step.output.clone().unwrap_or(Value::Null);
                    let params = step.params.clone();
                    return Ok(match &node.kind {
                        NodeKind::End { .. } => NodeDone::End(output),
                        NodeKind::Condition { .. } => NodeDone::Output {
                            next: Some(chosen_next(&output)),
                            params,
                            output,
                        },
                        _ => NodeDone::Output {
                            params,
                            output,
                            next: None,
                        },
                    });
                }
                (NodeState::Skipped { .. }, Some(step)) => {
                    return Ok(NodeDone::Output {
                        params: step.params.clone(),
                        output: Value::Null,
                        next: None,
                    });
                }
                (NodeState::Failed { error }, _) => {
                    return after_failure(node, &path, error.clone());
                }
                _ => {}
            }
            if self.shared.cancel_requested(self.id) {
                return Err(Stop::Cancelled);
            }
            if self.shared.is_handing_over() {
                return Err(Stop::HandOver);
            }
            let stored_params = stored.and_then(|step| step.params);
            match &node.kind {
                NodeKind::Tool { tool, params } => {
                    self.exec_call(
                        node,
                        &path,
                        iteration,
                        scope,
                        state,
                        stored_params,
                        tool,
                        params,
                        None,
                        false,
                    )
                    .await
                }
                NodeKind::Approval {
                    tool,
                    params,
                    summary,
                } => {
                    self.exec_call(
                        node,
                        &path,
                        iteration,
                        scope,
                        state,
                        stored_params,
                        tool,
                        params,
                        summary.as_ref(),
                        true,
                    )
                    .await
                }
                NodeKind::Condition {
                    branches,
                    otherwise,
                } => {
                    self.start(&path, iteration, &state, None)?;
                    let mut chosen = None;
                    for branch in branches {
                        match branch.when.evaluate_bool(scope) {
                            Ok(true) => {
                                chosen = Some(branch.next.clone());
                                break;
                            }
                            Ok(false) => {}
                            Err(error) => {
                                return self.final_failure(
                                    node,
                                    &path,
                                    iteration,
                                    None,
                                    Failure::expression(&path, error),
                                    true,
                                );
                            }
                        }
                    }
                    let chosen = chosen.or_else(|| otherwise.clone());
                    let output = json!({ "next": chosen.as_ref().map(NodeId::as_str) });
                    self.complete(&path, iteration, output.clone())?;
                    Ok(NodeDone::Output {
                        params: None,
                        output,
                        next: Some(chosen),
                    })
                }
                NodeKind::Wait(wait_for) => {
                    self.exec_wait(node, &path, iteration, scope, state, wait_for)
                }
                NodeKind::End { output } => {
                    self.start(&path, iteration, &state, None)?;
                    let mapping = output.as_ref().or(self.definition.output.as_ref());
                    let output = match mapping.map(|mapping| mapping::evaluate(mapping, scope)) {
                        None => Value::Null,
                        Some(Ok(output)) => output,
                        Some(Err(error)) => {
                            return self.final_failure(
                                node,
                                &path,
                                iteration,
                                None,
                                Failure::expression(&path, error),
                                true,
                            );
                        }
                    };
                    self.complete(&path, iteration, output.clone())?;
                    Ok(NodeDone::End(output))
                }
                NodeKind::Workflow { definition, input } => self.exec_child(
                    node,
                    &path,
                    iteration,
                    scope,
                    state,
                    stored_params,
                    definition,
                    input,
                ),
                NodeKind::Foreach {
                    items,
                    item,
                    max_items,
                    concurrency,
                    body,
                } => {
                    self.start(&path, iteration, &state, None)?;
                    let list = match items.evaluate(scope) {
                        Ok(Value::Array(list)) => list,
                        Ok(other) => {
                            let failure = Failure::other(
                                "not_a_list",
                                format!(
                                    "node `{path}`: `{items}` must give a list to iterate over, \
                                     and it gave {other}"
                                ),
                            );
                            return self.final_failure(node, &path, iteration, None, failure, true);
                        }
                        Err(error) => {
                            let failure = Failure::expression(&path, error);
                            return self.final_failure(node, &path, iteration, None, failure, true);
                        }
                    };
                    if list.len() > *max_items as usize {
                        let failure = Failure::other(
                            "too_many_items",
                            format!(
                                "node `{path}`: the list has {} items, more than its max_items \
                                 of {max_items}",
                                list.len()
                            ),
                        );
                        return self.final_failure(node, &path, iteration, None, failure, true);
                    }
                    // Inside another `foreach`, the items' steps are named per outer item
                    // (`NodePath` documents the format).
                    let prefix = if mapping::inside_foreach(&self.definition, path.as_str()) {
                        path.for_item(iteration)
                    } else {
                        path.clone()
                    };
                    let mut runs = Vec::with_capacity(list.len());
                    for (index, value) in list.into_iter().enumerate() {
                        let mut child_scope = scope.clone();
                        child_scope
                            .set(item.to_string(), value)
                            .set("index", json!(index));
                        let index = u32::try_from(index).unwrap_or(u32::MAX);
                        runs.push(self.run_block(body, Some(&prefix), index, child_scope));
                    }
                    let flows: Vec<Result<Flow, Stop>> = futures::stream::iter(runs)
                        .buffered(usize::try_from(*concurrency).unwrap_or(1).max(1))
                        .collect()
                        .await;
                    let outputs = self.join(&path, iteration, flows)?;
                    match outputs {
                        Joined::End(output) => Ok(NodeDone::End(output)),
                        Joined::Outputs(outputs) => {
                            let output = Value::Array(outputs);
                            self.complete(&path, iteration, output.clone())?;
                            Ok(NodeDone::Output {
                                params: None,
                                output,
                                next: None,
                            })
                        }
                    }
                }
                NodeKind::Parallel {
                    branches,
                    concurrency,
                } => {
                    self.start(&path, iteration, &state, None)?;
                    let prefixes: Vec<NodePath> =
                        branches.iter().map(|(name, _)| path.child(name)).collect();
                    let mut runs = Vec::with_capacity(branches.len());
                    for ((_, block), prefix) in branches.iter().zip(&prefixes) {
                        runs.push(self.run_block(block, Some(prefix), iteration, scope.clone()));
                    }
                    let flows: Vec<Result<Flow, Stop>> = futures::stream::iter(runs)
                        .buffered(usize::try_from(*concurrency).unwrap_or(1).max(1))
                        .collect()
                        .await;
                    match self.join(&path, iteration, flows)? {
                        Joined::End(output) => Ok(NodeDone::End(output)),
                        Joined::Outputs(outputs) => {
                            let output: Map<String, Value> = branches
                                .iter()
                                .map(|(name, _)| name.to_string())
                                .zip(outputs)
                                .collect();
                            let output = Value::Object(output);
                            self.complete(&path, iteration, output.clone())?;
                            Ok(NodeDone::Output {
                                params: None,
                                output,
                                next: None,
                            })
                        }
                    }
                }
            }
        }
        .instrument(span)
        .boxed()
    }

    /// Joins the blocks a `foreach` or `parallel` node ran: their outputs in order, or the
    /// first reason to stop (a failure fails the node; waits are merged).
    fn join(
        &self,
        path: &NodePath,
        iteration: u32,
        flows: Vec<Result<Flow, Stop>>,
    ) -> Result<Joined, Stop> {
        let mut outputs = Vec::with_capacity(flows.len());
        let mut end = None;
        let mut stop: Option<Stop> = None;
        for flow in flows {
            match flow {
                Ok(Flow::Done(output, _)) => outputs.push(output),
                Ok(Flow::End(output)) => end = end.or(Some(output)),
                Err(next) => stop = Some(merge(stop, next)),
            }
        }
        match stop {
            Some(Stop::Fail { error, compensate }) => {
                self.node_event(
                    path,
                    iteration,
                    NodeEvent::Fail {
                        error: error.clone(),
                    },
                    Counting::No,
                    None,
                    |step| step.error = Some(json!({ "kind": "block_failed", "message": error })),
                )?;
                Err(Stop::Fail { error, compensate })
            }
            Some(other) => Err(other),
            None => Ok(match end {
                Some(output) => Joined::End(output),
                None => Joined::Outputs(outputs),
            }),
        }
    }

    pub(super) fn complete(
        &self,
        path: &NodePath,
        iteration: u32,
        output: Value,
    ) -> Result<(), Fault> {
        self.node_event(
            path,
            iteration,
            NodeEvent::Complete,
            Counting::No,
            None,
            |step| step.output = Some(output),
        )
        .map(drop)
    }

    fn exec_wait(
        &self,
        node: &Node,
        path: &NodePath,
        iteration: u32,
        scope: &Scope,
        state: NodeState,
        wait_for: &WaitFor,
    ) -> Result<NodeDone, Stop> {
        let now = self.shared.clock.now();
        let until = match state {
            NodeState::WaitingTimer { until } => until,
            state => {
                self.start(path, iteration, &state, None)?;
                let until = match wait_for {
                    WaitFor::Duration(duration) => now.checked_add(*duration).map_err(|error| {
                        Failure::other("invalid_time", format!("node `{path}`: {error}"))
                    }),
                    WaitFor::Until(expression) => match expression.evaluate(scope) {
                        Ok(Value::String(text)) => text.parse::<Timestamp>().map_err(|error| {
                            Failure::other(
                                "invalid_time",
                                format!(
                                    "node `{path}`: `{expression}` gave `{text}`, which is not an \
                                     RFC 3339 time: {error}"
                                ),
                            )
                        }),
                        Ok(other) => Err(Failure::other(
                            "invalid_time",
                            format!(
                                "node `{path}`: `{expression}` must give an RFC 3339 time, and it \
                                 gave {other}"
                            ),
                        )),
                        Err(error) => Err(Failure::expression(path, error)),
                    },
                };
                let until = match until {
                    Ok(until) => until,
                    Err(failure) => {
                        return self.final_failure(node, path, iteration, None, failure, true);
                    }
                };
                self.node_event(
                    path,
                    iteration,
                    NodeEvent::AwaitTimer { until },
                    Counting::No,
                    None,
                    |_| {},
                )?;
                until
            }
        };
        if until <= now {
            self.complete(path, iteration, Value::Null)?;
            return Ok(NodeDone::Output {
                params: None,
                output: Value::Null,
                next: None,
            });
        }
        Err(Stop::Suspend {
            reason: format!("node `{path}` waits until {until}"),
            wake_at: Some(until),
            awaits_decision: false,
        })
    }

    /// A `workflow` node: starts its child run once, then waits for its end.
    #[allow(
        clippy::too_many_arguments,
        reason = "the node's parts, passed down as the definition holds them"
    )]
    fn exec_child(
        &self,
        node: &Node,
        path: &NodePath,
        iteration: u32,
        scope: &Scope,
        state: NodeState,
        stored_params: Option<Value>,
        definition: &Arc<Definition>,
        input: &Mapping,
    ) -> Result<NodeDone, Stop> {
        let params = match stored_params {
            Some(params) if params.get(CHILD_RUN).is_some() => params,
            _ => {
                let input = match mapping::evaluate(input, scope) {
                    Ok(input) => input,
                    Err(error) => {
                        self.start(path, iteration, &state, None)?;
                        let failure = Failure::expression(path, error);
                        return self.final_failure(node, path, iteration, None, failure, true);
                    }
                };
                let params = json!({ CHILD_RUN: RunId::new().to_string(), "input": input });
                self.start(path, iteration, &NodeState::Pending, Some(&params))?;
                params
            }
        };
        let child: Option<RunId> = params
            .get(CHILD_RUN)
            .and_then(Value::as_str)
            .and_then(|text| text.parse().ok());
        let Some(child) = child else {
            let failure = Failure::other("child_run", format!("node `{path}`: no child run id"));
            return self.final_failure(node, path, iteration, Some(params), failure, true);
        };
        let waiting = Stop::Suspend {
            reason: format!("node `{path}` waits for its child run {child}"),
            wake_at: None,
            awaits_decision: false,
        };
        match self.shared.store.run(child).map_err(Fault::from)? {
            None => {
                let parent = ParentStep {
                    run: self.id,
                    path: path.clone(),
                    iteration,
                };
                let input = params.get("input").cloned().unwrap_or(Value::Null);
                match self.shared.create_run(
                    child,
                    Arc::clone(definition),
                    input,
                    &self.caller,
                    Some(parent),
                ) {
                    Ok(()) => {
                        self.shared.kick(child);
                        Err(waiting)
                    }
                    Err(error) => {
                        let failure =
                            Failure::other("child_run", format!("node `{path}`: {error}"));
                        self.final_failure(node, path, iteration, Some(params), failure, true)
                    }
                }
            }
            Some(record) => match record.state {
                RunState::Completed => {
                    let output = record.output.unwrap_or(Value::Null);
                    self.complete(path, iteration, output.clone())?;
                    Ok(NodeDone::Output {
                        params: Some(params),
                        output,
                        next: None,
                    })
                }
                state if state.is_terminal() => {
                    let failure = Failure::other(
                        "child_run_failed",
                        format!("node `{path}`: child run {child} ended {state}"),
                    );
                    self.final_failure(node, path, iteration, Some(params), failure, true)
                }
                _ => Err(waiting),
            },
        }
    }

    /// A node's final failure (after its retries), by its `on_failure`. `running`: the node is
    /// running (else waiting for a decision, and it is failed first).
    pub(super) fn final_failure(
        &self,
        node: &Node,
        path: &NodePath,
        iteration: u32,
        params: Option<Value>,
        failure: Failure,
        running: bool,
    ) -> Result<NodeDone, Stop> {
        let Failure { message, detail } = failure;
        let record_error = |step: &mut StepRecord| step.error = Some(detail);
        if running {
            match &node.on_failure {
                OnFailure::Skip => {
                    self.node_event(
                        path,
                        iteration,
                        NodeEvent::Skip { reason: message },
                        Counting::No,
                        None,
                        record_error,
                    )?;
                    return Ok(NodeDone::Output {
                        params,
                        output: Value::Null,
                        next: None,
                    });
                }
                OnFailure::Escalate => {
                    self.node_event(
                        path,
                        iteration,
                        NodeEvent::Retry {
                            error: message.clone(),
                        },
                        Counting::No,
                        None,
                        record_error,
                    )?;
                    return Err(Stop::Suspend {
                        reason: format!(
                            "node `{path}` failed and waits for a person to resume (it runs \
                             again) or cancel the run: {message}"
                        ),
                        wake_at: None,
                        awaits_decision: false,
                    });
                }
                _ => {}
            }
        }
        self.node_event(
            path,
            iteration,
            NodeEvent::Fail {
                error: message.clone(),
            },
            Counting::No,
            None,
            record_error,
        )?;
        after_failure(node, path, message)
    }
}

/// Where a run goes once `node` is recorded failed: by its `on_failure`.
fn after_failure(node: &Node, path: &NodePath, message: String) -> Result<NodeDone, Stop> {
    match &node.on_failure {
        OnFailure::Skip => Ok(NodeDone::Output {
            params: None,
            output: Value::Null,
            next: None,
        }),
        OnFailure::Fallback(id) => Ok(NodeDone::Goto(id.clone())),
        OnFailure::Fail => Err(Stop::Fail {
            error: failed_node(path, &message),
            compensate: false,
        }),
        OnFailure::Compensate | OnFailure::Escalate => Err(Stop::Fail {
            error: failed_node(path, &message),
            compensate: true,
        }),
    }
}

fn failed_node(path: &NodePath, message: &str) -> String {
    if message.starts_with("node `") {
        message.to_owned()
    } else {
        format!("node `{path}` failed: {message}")
    }
}

/// What the joined blocks of a `foreach` or `parallel` node gave.
enum Joined {
    Outputs(Vec<Value>),
    End(Value),
}

/// The stronger of two reasons to stop: a fault, then a failure, a cancel, a hand-over (the
/// engine that takes the run over meets the waits again), and a wait (the earliest wake time
/// of the two).
fn merge(current: Option<Stop>, next: Stop) -> Stop {
    let Some(current) = current else {
        return next;
    };
    fn rank(stop: &Stop) -> u8 {
        match stop {
            Stop::Fault(_) => 4,
            Stop::Fail { .. } => 3,
            Stop::Cancelled => 2,
            Stop::HandOver => 1,
            Stop::Suspend { .. } => 0,
        }
    }
    match (current, next) {
        (
            Stop::Suspend {
                reason,
                wake_at,
                awaits_decision,
            },
            Stop::Suspend {
                wake_at: other_wake,
                awaits_decision: other_awaits,
                ..
            },
        ) => Stop::Suspend {
            reason,
            wake_at: match (wake_at, other_wake) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            awaits_decision: awaits_decision || other_awaits,
        },
        (current, next) if rank(&next) > rank(&current) => next,
        (current, _) => current,
    }
}

/// The branch a completed `condition` step chose.
fn chosen_next(output: &Value) -> Option<NodeId> {
    output.get("next").and_then(Value::as_str).map(NodeId::new)
}
