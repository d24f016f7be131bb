//! Issue 21, run timeouts, through the governor's Rust API on a manual
//! clock: a call begun close to its run's deadline gets only what is left
//! of the run as its timeout (so a transport cuts it there in real time),
//! and a call begun after the deadline is `run_expired` at step 5.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code: a failed unwrap is a failed test")]

use std::sync::Arc;

use harnessweaver_core::governor::{Begin, Governor, GovernorOptions};
use harnessweaver_core::harness::Harness;
use harnessweaver_core::ManualClock;
use harnessweaver_core::{CallContext, Principal};

#[test]
fn a_call_near_the_run_deadline_gets_what_is_left_and_one_after_it_is_refused() {
    let dir = std::env::temp_dir().join(format!("hw-run-timeout-api-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(
        dir.join("harness.yaml"),
        "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  tools:\n    manifests: [\"tools/*.yaml\"]\n  runs:\n    sources:\n      api: { timeout: 1m }\n      nightly: {}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("tools/lookup.yaml"),
        "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: { name: lookup }\nspec:\n  handler: \"x:lookup\"\n  description: Looks up.\n  timeout: 30s\n",
    )
    .unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let harness = Harness::load(dir.join("harness.yaml")).unwrap();
    let governor = Governor::from_harness(&harness, GovernorOptions { clock: Some(Arc::new(clock.clone())), ..GovernorOptions::default() }).unwrap();
    let alice = Principal::new("alice");
    let run = governor.admit_run("api", Some(&alice)).unwrap();
    let untimed = governor.admit_run("nightly", Some(&alice)).unwrap();
    let ctx = |run: &str| CallContext { principal: alice.clone(), run_id: Some(run.to_string()), ..CallContext::default() };

    let Begin::Invoke(early) = governor.begin("lookup", serde_json::json!({}), &ctx(&run)) else { panic!("refused early") };
    assert_eq!(early.timeout_ms, 30_000, "the tool's own timeout while the run has more left");
    clock.advance_ms(59_990);
    let Begin::Invoke(late) = governor.begin("lookup", serde_json::json!({}), &ctx(&run)) else { panic!("refused before the deadline") };
    assert_eq!(late.timeout_ms, 10, "only what is left of the run");
    let Begin::Invoke(other) = governor.begin("lookup", serde_json::json!({}), &ctx(&untimed)) else { panic!("a run without a timeout") };
    assert_eq!(other.timeout_ms, 30_000);
    clock.advance_ms(10);
    let Begin::Done(refused) = governor.begin("lookup", serde_json::json!({}), &ctx(&run)) else { panic!("ran after the deadline") };
    assert_eq!(refused.code.map(|c| c.as_str()), Some("run_expired"));
    assert_eq!(refused.step.map(|s| s.as_str()), Some("limits"));
    let _ = std::fs::remove_dir_all(&dir);
}
