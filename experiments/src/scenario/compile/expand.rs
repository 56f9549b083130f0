//! Pass 3, call expansion: a program with its `call`s inlined.
//!
//! [`operations`] parses the operations a program calls, directly or
//! through others (each once per scenario: an operation no program calls
//! is never checked), checks their `key` steps and the program's, and
//! finds the largest key they set. [`inline`] then expands the program,
//! each `call` followed into the operation's steps: a recursive `call` is
//! an error, and so is an expansion past the step budget (operations that
//! each call the next twice double the steps at every level).

use super::{key_range, undefined, Budget};
use crate::program::Origin;
use crate::scenario::doc::Doc;
use crate::scenario::error::ScenarioError;
use crate::scenario::source::Source;
use crate::scenario::steps::{parse_program, too_deep, Node, StepKind, MAX_NESTING};
use indexmap::IndexMap;
use std::collections::HashSet;

/// The operations parsed so far, by name.
pub(super) type Ops = IndexMap<String, Vec<Node>>;

/// A program with its `call`s inlined: its steps, each `call` standing
/// for the steps of the operation it names. The expansion is not copied:
/// the passes after this one follow a `call` into [`Expanded::called`].
pub(super) struct Expanded<'a> {
    pub nodes: &'a [Node],
    ops: &'a Ops,
}

impl<'a> Expanded<'a> {
    /// The steps of operation `op`, which a `call` of the program names.
    pub fn called(&self, op: &str) -> &'a [Node] {
        self.ops
            .get(op)
            .expect("operations() parsed every operation called")
    }
}

/// Where a node is written (a block: its head).
fn node_origin(n: &Node) -> &Origin {
    match n {
        Node::Leaf(s) => &s.origin,
        Node::Block { head, .. } => &head.origin,
    }
}

/// Parses into `ops` the operations that `nodes` call, directly or not,
/// and returns the largest key (plus one) any of their `key` steps sets:
/// `[self]` checks use it.
pub(super) fn operations(
    src: &Source,
    doc: &Doc,
    nodes: &[Node],
    ops: &mut Ops,
) -> Result<u32, ScenarioError> {
    key_bound(src, doc, nodes, ops, &mut HashSet::new(), 0)
}

/// [`operations`] over `nodes`, nested `depth` levels deep; `seen` holds
/// the operations visited for this program (each is visited once: a
/// second visit finds nothing new). The depth is checked here too, since
/// this pass recurses before [`inline`] checks every path.
fn key_bound(
    src: &Source,
    doc: &Doc,
    nodes: &[Node],
    ops: &mut Ops,
    seen: &mut HashSet<String>,
    depth: usize,
) -> Result<u32, ScenarioError> {
    let mut bound = 0;
    for n in nodes {
        bound = bound.max(match n {
            Node::Leaf(s) => match &s.kind {
                StepKind::Key(k) => key_range(doc, &s.origin, k)?.1,
                StepKind::Call(op) if seen.insert(op.clone()) => {
                    if depth >= MAX_NESTING {
                        return Err(too_deep(&s.origin));
                    }
                    let body = op_nodes(src, doc, ops, &s.origin, op)?;
                    key_bound(src, doc, &body, ops, seen, depth + 1)?
                }
                _ => 0,
            },
            Node::Block { head, body, .. } => {
                if depth >= MAX_NESTING {
                    return Err(too_deep(&head.origin));
                }
                key_bound(src, doc, body, ops, seen, depth + 1)?
            }
        });
    }
    Ok(bound)
}

/// The steps of operation `name`, called at `o`: parsed on first use.
fn op_nodes(
    src: &Source,
    doc: &Doc,
    ops: &mut Ops,
    o: &Origin,
    name: &str,
) -> Result<Vec<Node>, ScenarioError> {
    if let Some(n) = ops.get(name) {
        return Ok(n.clone());
    }
    let Some(def) = doc.ops.get(name) else {
        return Err(undefined(
            o,
            "operation",
            name,
            "ops",
            "defined",
            doc.ops.keys(),
        ));
    };
    let nodes = parse_program(src, &format!("ops.{name}.steps"), &def.get_ref().steps)?;
    ops.insert(name.to_string(), nodes.clone());
    Ok(nodes)
}

/// Expands `nodes`, each `call` followed into the operation's steps
/// (which [`operations`] parsed into `ops`): an error if a `call` is
/// recursive, if `call`s and blocks nest deeper than [`MAX_NESTING`]
/// (the passes after this one recurse as deep), or if the expansion
/// visits more steps than `budget` allows.
pub(super) fn inline<'a>(
    nodes: &'a [Node],
    ops: &'a Ops,
    budget: &mut Budget,
) -> Result<Expanded<'a>, ScenarioError> {
    walk(nodes, ops, &mut Vec::new(), 0, budget)?;
    Ok(Expanded { nodes, ops })
}

/// [`inline`] inside the operations `calls`, outermost first, `depth`
/// levels of calls and blocks deep.
fn walk<'a>(
    nodes: &'a [Node],
    ops: &'a Ops,
    calls: &mut Vec<&'a str>,
    depth: usize,
    budget: &mut Budget,
) -> Result<(), ScenarioError> {
    for n in nodes {
        budget.visit(node_origin(n))?;
        match n {
            Node::Leaf(s) => {
                if let StepKind::Call(op) = &s.kind {
                    if calls.contains(&op.as_str()) {
                        let chain = format!("{} -> {op}", calls.join(" -> "));
                        return Err(s.origin.error(format!("recursive call: {chain}")));
                    }
                    if depth >= MAX_NESTING {
                        return Err(too_deep(&s.origin));
                    }
                    let (name, body) = ops
                        .get_key_value(op.as_str())
                        .expect("operations() parsed every operation called");
                    calls.push(name);
                    let r = walk(body, ops, calls, depth + 1, budget);
                    calls.pop();
                    r?;
                }
            }
            Node::Block { head, body, .. } => {
                if depth >= MAX_NESTING {
                    return Err(too_deep(&head.origin));
                }
                walk(body, ops, calls, depth + 1, budget)?
            }
        }
    }
    Ok(())
}
