//! The gate: a prepared call's requirements against the access rules
//! (`spec.builtins.access` and the permission file), answering allow, deny
//! or gated. Deny is authoritative: a matching deny wins over any allow,
//! whichever layer the allow came from. A gated requirement offers
//! candidates, reusable "always allow" rules that authorise nothing until an
//! approver accepts one into the permission file.

use serde::Serialize;

use super::command::{allow_matches, deny_matches};
use crate::harness::builtins::{AccessEffect, AccessRule, CapabilityKind};
use crate::manifest::confusable_key;

/// What one requirement asks for: the kind and the canonical match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    /// A canonical path relative to the workspace (`None` root: a host path, shown absolute).
    Path { rel: String, host: bool },
    /// One simple command's argv.
    Argv(Vec<String>),
    /// An origin `scheme://host:port`.
    Origin(String),
}

/// A capability a call needs, with its canonical match and what a human reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The capability kind.
    pub kind: CapabilityKind,
    /// What it is for, canonical.
    pub matched: Match,
    /// A human-facing description.
    pub description: String,
}

/// A reusable approval proposal (`always allow …`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    /// Its id within the approval (`c1`, `c2`, …).
    pub id: String,
    /// The capability kind.
    pub kind: &'static str,
    /// What a human reads.
    pub description: String,
    /// The path globs it would allow (filesystem kinds).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The argv prefix it would allow (`command.execute`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// The origins it would allow (`network`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub origins: Vec<String>,
}

impl Candidate {
    /// The access rule accepting it adds to the permission file.
    pub fn rule(&self) -> Option<AccessRule> {
        let kind = CapabilityKind::ALL.iter().find(|(n, _)| *n == self.kind).map(|(_, k)| *k)?;
        Some(AccessRule {
            effect: AccessEffect::Allow,
            kind,
            paths: self.paths.clone(),
            command: self.command.clone(),
            origins: self.origins.clone(),
            source: "permissions".into(),
        })
    }
}

/// The gate's answer for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every requirement is allowed.
    Allow,
    /// A requirement is denied: the rule and what it matched.
    Deny(String),
    /// Some requirements need a human: why, and the candidates offered.
    Gated { reasons: Vec<String>, candidates: Vec<Candidate> },
}

fn glob_matches(pattern: &str, path: &str) -> bool {
    let options = glob::MatchOptions { case_sensitive: true, require_literal_separator: true, require_literal_leading_dot: false };
    glob::Pattern::new(pattern).is_ok_and(|p| p.matches_with(path, options))
}

/// Whether `rule` covers `req`. A deny rule on paths also matches the
/// confusable skeleton of the path, so `.gіt/hooks` (Cyrillic і) is denied
/// by a deny on `.git/**`.
pub fn covers(rule: &AccessRule, req: &Requirement) -> bool {
    if rule.kind != req.kind {
        return false;
    }
    match &req.matched {
        Match::Path { rel, .. } => rule
            .paths
            .iter()
            .any(|p| glob_matches(p, rel) || (rule.effect == AccessEffect::Deny && glob_matches(&confusable_key(p), &confusable_key(rel)))),
        Match::Argv(argv) => match rule.effect {
            AccessEffect::Allow => allow_matches(&rule.command, argv),
            AccessEffect::Deny => deny_matches(&rule.command, argv),
        },
        Match::Origin(origin) => rule.origins.iter().any(|o| crate::harness::builtins::canonical_origin(o).is_some_and(|c| c == *origin)),
    }
}

/// A rule as a short text for reasons and audit.
pub fn describe_rule(rule: &AccessRule) -> String {
    let what = match rule.kind {
        CapabilityKind::FilesystemRead | CapabilityKind::FilesystemWrite => rule.paths.join("`, `"),
        CapabilityKind::CommandExecute => rule.command.join(" "),
        CapabilityKind::Network => rule.origins.join("`, `"),
    };
    let effect = if rule.effect == AccessEffect::Allow { "allow" } else { "deny" };
    format!("{} rule: {effect} {} `{what}`", rule.source, rule.kind.as_str())
}

/// What a requirement gets when no rule matches: reads inside the workspace
/// are allowed; writes, commands and fetches need a human.
fn default_allows(req: &Requirement) -> bool {
    req.kind == CapabilityKind::FilesystemRead
}

/// The verdict for `reqs` under `rules` (every layer, merged: a deny from any
/// layer stands whatever another allows). `egress`: the origins `fetch` may
/// reach at all.
pub fn decide(reqs: &[Requirement], rules: &[AccessRule], egress: &[String]) -> Verdict {
    let mut reasons = Vec::new();
    let mut candidates = Vec::new();
    for req in reqs {
        if let Some(deny) = rules.iter().find(|r| r.effect == AccessEffect::Deny && covers(r, req)) {
            return Verdict::Deny(format!("{} denies {}", describe_rule(deny), req.description));
        }
        if let Match::Origin(origin) = &req.matched {
            if !egress.iter().any(|e| crate::harness::builtins::canonical_origin(e).is_some_and(|c| c == *origin)) {
                return Verdict::Deny(format!("`{origin}` is not in `spec.builtins.egress`"));
            }
        }
        if rules.iter().any(|r| r.effect == AccessEffect::Allow && covers(r, req)) || default_allows(req) {
            continue;
        }
        reasons.push(format!("{} needs approval: {}", req.kind.as_str(), req.description));
        for mut c in candidates_for(req) {
            if !candidates.iter().any(|x: &Candidate| x.description == c.description) {
                c.id = format!("c{}", candidates.len() + 1);
                candidates.push(c);
            }
        }
    }
    if reasons.is_empty() {
        Verdict::Allow
    } else {
        Verdict::Gated { reasons, candidates }
    }
}

/// The "always allow" proposals for a requirement that needs a human.
fn candidates_for(req: &Requirement) -> Vec<Candidate> {
    let kind = req.kind.as_str();
    let blank = |description: String| Candidate { id: String::new(), kind, description, paths: Vec::new(), command: Vec::new(), origins: Vec::new() };
    match &req.matched {
        Match::Path { rel, host: false } => {
            let verb = if req.kind == CapabilityKind::FilesystemWrite { "writes to" } else { "reads of" };
            let mut out = vec![Candidate { paths: vec![glob_escape(rel)], ..blank(format!("always allow {verb} `{rel}` in this workspace")) }];
            if let Some((dir, _)) = rel.rsplit_once('/') {
                let under = if req.kind == CapabilityKind::FilesystemWrite { "writes under" } else { "reads under" };
                out.push(Candidate {
                    paths: vec![format!("{}/**", glob_escape(dir))],
                    ..blank(format!("always allow {under} `{dir}/` in this workspace"))
                });
            }
            out
        }
        Match::Path { host: true, .. } => Vec::new(),
        Match::Argv(argv) => {
            // The program and its leading words, up to the first flag or path, at most two.
            let prefix: Vec<String> = argv.iter().take(2).take_while(|a| !a.starts_with('-') && !a.contains('/')).cloned().collect();
            let mut out = Vec::new();
            if !prefix.is_empty() && prefix.len() < argv.len() {
                out.push(Candidate { command: prefix.clone(), ..blank(format!("always allow `{}` in this workspace", prefix.join(" "))) });
            }
            out.push(Candidate { command: argv.clone(), ..blank(format!("always allow exactly `{}` in this workspace", argv.join(" "))) });
            out
        }
        Match::Origin(origin) => vec![Candidate { origins: vec![origin.clone()], ..blank(format!("always allow fetches from `{origin}`")) }],
    }
}

/// `path` with glob metacharacters escaped, so it matches only itself.
fn glob_escape(path: &str) -> String {
    glob::Pattern::escape(path)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, reason = "test code")]
    use super::*;

    fn rule(effect: AccessEffect, kind: CapabilityKind, what: &[&str], source: &str) -> AccessRule {
        let v: Vec<String> = what.iter().map(|s| s.to_string()).collect();
        let (paths, command, origins) = match kind {
            CapabilityKind::CommandExecute => (vec![], v, vec![]),
            CapabilityKind::Network => (vec![], vec![], v),
            _ => (v, vec![], vec![]),
        };
        AccessRule { effect, kind, paths, command, origins, source: source.into() }
    }

    fn argv(s: &str) -> Requirement {
        Requirement {
            kind: CapabilityKind::CommandExecute,
            matched: Match::Argv(s.split_whitespace().map(str::to_string).collect()),
            description: format!("run `{s}`"),
        }
    }

    #[test]
    fn a_deny_is_never_dropped_when_allows_are_merged() {
        let rules = vec![
            rule(AccessEffect::Allow, CapabilityKind::CommandExecute, &["rm", "-rf"], "permissions"),
            rule(AccessEffect::Deny, CapabilityKind::CommandExecute, &["rm"], "harness"),
            rule(AccessEffect::Allow, CapabilityKind::CommandExecute, &["rm"], "permissions"),
        ];
        assert!(matches!(decide(&[argv("rm -fr build")], &rules, &[]), Verdict::Deny(_)));
        // Without the deny the same call is allowed.
        assert_eq!(decide(&[argv("rm -fr build")], &rules[..1], &[]), Verdict::Allow);
    }

    #[test]
    fn confusable_paths_meet_a_deny() {
        let rules = vec![rule(AccessEffect::Deny, CapabilityKind::FilesystemWrite, &[".git/**"], "harness")];
        let req = |rel: &str| Requirement {
            kind: CapabilityKind::FilesystemWrite,
            matched: Match::Path { rel: rel.into(), host: false },
            description: rel.into(),
        };
        assert!(matches!(decide(&[req(".git/hooks/pre-commit")], &rules, &[]), Verdict::Deny(_)));
        assert!(matches!(decide(&[req(".g\u{0456}t/hooks/pre-commit")], &rules, &[]), Verdict::Deny(_)));
        assert!(matches!(decide(&[req("src/main.rs")], &rules, &[]), Verdict::Gated { .. }));
    }

    #[test]
    fn gated_commands_offer_a_family_and_an_exact_candidate() {
        let Verdict::Gated { candidates, .. } = decide(&[argv("git status -s")], &[], &[]) else { panic!() };
        assert_eq!(candidates[0].command, vec!["git", "status"]);
        assert_eq!(candidates[1].command, vec!["git", "status", "-s"]);
        let accepted = vec![candidates[0].rule().unwrap()];
        assert_eq!(decide(&[argv("git status")], &accepted, &[]), Verdict::Allow);
        assert!(matches!(decide(&[argv("git push")], &accepted, &[]), Verdict::Gated { .. }));
    }
}
