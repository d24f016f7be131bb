//! `spec.runs` (issue 21, Touba's triggers and run limits): who may start a
//! run and how often. Each source (`api`, `gateway`, or a named trigger such
//! as a schedule or a webhook) is inactive until listed; a listed source has
//! `enabled`, `max_runs_per_day` per principal and a run `timeout`. A policy
//! layer file may repeat `spec.runs` to narrow these limits, never to widen
//! them (`run_limit_widened` at load).

use std::collections::BTreeMap;

use crate::check::{child_path, Checker};
use crate::manifest::Duration;
use crate::yaml::{Node, NodeValue, Pos};

/// One source of runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSource {
    /// `enabled` (default true).
    pub enabled: bool,
    /// `max_runs_per_day` per principal (none: no limit).
    pub max_runs_per_day: Option<u64>,
    /// `timeout` of a run, in ms (none: no limit).
    pub timeout_ms: Option<u64>,
}

/// `spec.runs`: the sources, by name. A harness without `spec.runs` admits every run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunsSettings {
    /// Source name to its limits.
    pub sources: BTreeMap<String, RunSource>,
}

/// Where each source was written, for a problem found when a layer narrows it.
pub(super) type RunPositions = BTreeMap<String, Pos>;

/// Parses `runs` at `base` (`spec.runs`); returns the settings and where each source is.
pub(super) fn parse_runs(node: &Node, cx: &mut Checker, base: &str) -> (RunsSettings, RunPositions) {
    let mut out = RunsSettings::default();
    let mut at = RunPositions::new();
    let Some(mut m) = cx.map(node, base) else { return (out, at) };
    let sources_path = format!("{base}.sources");
    if let Some(s) = m.get("sources") {
        if let Some(mut sources) = cx.map(s, &sources_path) {
            for (k, v) in sources.all() {
                let name = k.as_str().unwrap_or_default().to_string();
                let path = child_path(&sources_path, &name);
                let Some(mut src) = cx.map(v, &path) else { continue };
                let enabled = src.get("enabled").and_then(|n| cx.boolean(n, &format!("{path}.enabled"))).unwrap_or(true);
                let max_runs_per_day = src.get("max_runs_per_day").and_then(|n| cx.count(n, &format!("{path}.max_runs_per_day")));
                let timeout_ms = src.get("timeout").and_then(|n| duration(cx, n, &format!("{path}.timeout")));
                src.finish(cx);
                at.insert(name.clone(), v.pos);
                out.sources.insert(name, RunSource { enabled, max_runs_per_day, timeout_ms });
            }
        }
    }
    m.finish(cx);
    (out, at)
}

pub(super) fn duration(cx: &mut Checker, n: &Node, path: &str) -> Option<u64> {
    let NodeValue::Str(text) = &n.value else {
        cx.report("wrong_type", n.pos, path, format!("`{path}` must be a duration like `30m`, not {}", n.kind()));
        return None;
    };
    let d = Duration::parse(text);
    if d.is_none() {
        cx.report(
            "invalid_duration",
            n.pos,
            path,
            format!("`{path}` is `{text}`; write a whole number greater than 0 and a unit: `500ms`, `30s`, `2m` or `1h`"),
        );
    }
    d.map(|d| d.ms)
}

/// Applies a lower layer's `runs` to `top`: each limit may only narrow.
/// A source the top does not list, a source the top disables and the layer
/// enables, a larger `max_runs_per_day` or a longer `timeout` (or dropping
/// one) is `run_limit_widened`.
pub(super) fn narrow(top: &mut Option<RunsSettings>, lower: &RunsSettings, at: &RunPositions, cx: &mut Checker) {
    let Some(top) = top else {
        if let Some((name, pos)) = at.iter().next() {
            cx.report(
                "run_limit_widened",
                *pos,
                &child_path("spec.runs.sources", name),
                "a policy layer may narrow `spec.runs`, and harness.yaml declares none (every run is admitted)".to_string(),
            );
        }
        return;
    };
    for (name, low) in &lower.sources {
        let pos = at.get(name).copied().unwrap_or_default();
        let path = child_path("spec.runs.sources", name);
        let Some(high) = top.sources.get_mut(name) else {
            cx.report("run_limit_widened", pos, &path, format!("source `{name}` is not in harness.yaml's `spec.runs`; a layer cannot add a source"));
            continue;
        };
        let widened = |what: &str| format!("`{path}.{what}` widens harness.yaml's limit; a policy layer may only narrow it");
        if low.enabled && !high.enabled {
            cx.report("run_limit_widened", pos, &format!("{path}.enabled"), widened("enabled"));
        }
        if let (Some(h), Some(l)) = (high.max_runs_per_day, low.max_runs_per_day) {
            if l > h {
                cx.report("run_limit_widened", pos, &format!("{path}.max_runs_per_day"), widened("max_runs_per_day"));
            }
        }
        if let (Some(h), Some(l)) = (high.timeout_ms, low.timeout_ms) {
            if l > h {
                cx.report("run_limit_widened", pos, &format!("{path}.timeout"), widened("timeout"));
            }
        }
        high.enabled &= low.enabled;
        high.max_runs_per_day = match (high.max_runs_per_day, low.max_runs_per_day) {
            (Some(h), Some(l)) => Some(h.min(l)),
            (h, l) => h.or(l),
        };
        high.timeout_ms = match (high.timeout_ms, low.timeout_ms) {
            (Some(h), Some(l)) => Some(h.min(l)),
            (h, l) => h.or(l),
        };
    }
}

/// Why a run from `source` is not admitted (before its per-day count), or `None`.
pub fn refusal(runs: Option<&RunsSettings>, source: &str) -> Option<String> {
    let runs = runs?;
    match runs.sources.get(source) {
        None => Some(format!("runs from `{source}` are not admitted: `spec.runs.sources` does not list it")),
        Some(s) if !s.enabled => Some(format!("runs from `{source}` are not admitted: the source is disabled")),
        Some(_) => None,
    }
}
