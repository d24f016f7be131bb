//! Loading a harness: reading `harness.yaml`, its policy layer files and
//! every manifest its globs name (in parallel for many), checking that each
//! path stays inside the harness directory, and finding duplicate tools.
//! Every problem is collected before the load fails, each with its file
//! (relative to the harness directory, `/` separators), line, column and
//! field path.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use super::model::{Harness, HarnessSpec};
use super::parse::parse_harness;
use super::policy::{parse_layer_file, LayerFile};
use crate::check::Checker;
use crate::error::{Error, Problem};
use crate::manifest::{self, parse_manifest, parse_text, Tool};
use crate::yaml::{Node, Pos};

/// The file name of `path` relative to `base`, with `/` separators.
fn relative(base: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path);
    rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect::<Vec<_>>().join("/")
}
impl Harness {
    /// Loads `harness.yaml` and every manifest it names, reporting every problem at once.
    /// A directory stands for the `harness.yaml` inside it.
    pub fn load(path: impl AsRef<Path>) -> Result<Harness, Error> {
        // Manifests that share an input schema share its compiled form.
        crate::validate::with_compile_cache(|| Self::load_uncached(path.as_ref(), crate::parallel::parallelism(), true))
    }

    /// [`Harness::load`] without `spec.tools.require_pins`: for the commands
    /// that pin (`tools pin`, `tools add`), which must load what they pin.
    pub fn load_to_pin(path: impl AsRef<Path>) -> Result<Harness, Error> {
        crate::validate::with_compile_cache(|| Self::load_uncached(path.as_ref(), crate::parallel::parallelism(), false))
    }

    /// Loads with manifests checked on up to `threads` threads; `pins`:
    /// whether `spec.tools.require_pins` applies.
    fn load_uncached(given: &Path, threads: usize, pins: bool) -> Result<Harness, Error> {
        let joined;
        let path = if given.is_dir() {
            joined = given.join("harness.yaml");
            joined.as_path()
        } else {
            given
        };
        let file_name = path.file_name().map_or_else(|| "harness.yaml".to_string(), |n| n.to_string_lossy().into_owned());
        let mut cx = Checker::new(Some(file_name.clone()));
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                cx.report("io_error", Pos::default(), "", format!("cannot read `{}`: {}", path.display(), io_reason(&e)));
                return Err(Error::Load(cx.problems));
            }
        };
        let dir = match path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p }).map(Path::canonicalize) {
            Some(Ok(d)) => d,
            _ => {
                cx.report("io_error", Pos::default(), "", format!("cannot resolve the directory of `{}`", path.display()));
                return Err(Error::Load(cx.problems));
            }
        };
        let node = match manifest::parse_text(&text, false) {
            Ok(n) => n,
            Err(problems) => {
                cx.extend(problems);
                return Err(Error::Load(cx.problems));
            }
        };
        let spec = parse_harness(&node, &mut cx, &file_name);
        let mut problems = cx.take_sorted();
        let Some((mut spec, globs, layer_files)) = spec else {
            return Err(Error::Load(manifest::nonempty(problems)));
        };
        spec.tools.require_pins &= pins;
        for lf in layer_files {
            problems.append(&mut load_layer_file(&dir, &lf, &file_name, &mut spec));
        }
        let myself = path.canonicalize().ok();
        let files = expand_globs(&dir, &globs, &mut cx, myself.as_deref());
        problems.append(&mut cx.take_sorted());

        let mut tools: Vec<Tool> = Vec::new();
        let mut seen: HashMap<String, String> = HashMap::new();
        // Each confusable key (case folding, UTS #39 skeleton) with the first name and file holding it.
        let mut keys: HashMap<String, (String, String)> = HashMap::new();
        // Read, parse and check every manifest (in parallel for many); then,
        // in file order, find duplicate names and collect the problems, so
        // the result is the same as checking the files one after another.
        for checked in crate::parallel::map_in_order(&files, threads, |f| check_manifest_file(&dir, f, &spec)) {
            let CheckedFile { rel, mut mcx, name, tool } = checked;
            let mut duplicate = false;
            // Duplicates are found by the written name, even when the
            // manifest has other problems.
            if let Some((name, pos)) = name {
                let key = manifest::confusable_key(&name);
                let clash = if let Some(first) = seen.get(&name) {
                    Some(("duplicate_tool", format!("tool `{name}` is defined in both `{first}` and `{rel}`")))
                } else {
                    keys.get(&key).map(|(other, first)| ("confusable_tool", confusable_message(&name, &rel, other, first)))
                };
                if let Some((code, message)) = clash {
                    duplicate = true;
                    let mut dup = Checker::new(Some(rel.clone()));
                    dup.report(code, pos, "metadata.name", message);
                    // Reported before the manifest's own problems, as when checked in turn.
                    dup.problems.append(&mut mcx.problems);
                    mcx.problems = dup.problems;
                } else {
                    keys.insert(key, (name.clone(), rel.clone()));
                    seen.insert(name, rel.clone());
                }
            }
            if let Some((t, clean)) = tool {
                if clean && !duplicate {
                    tools.push(t);
                }
            }
            problems.append(&mut mcx.take_sorted());
        }
        if let Some(b) = &spec.builtins {
            let (shipped, mut found) = super::builtins::shipped_tools(b, &dir, spec.tools.max_output_bytes);
            problems.append(&mut found);
            for t in shipped {
                if let Some(first) = seen.get(t.name()) {
                    problems.push(Problem {
                        path: "spec.builtins.tools".into(),
                        file: Some(file_name.clone()),
                        ..Problem::new("duplicate_tool", format!("tool `{}` is both a built-in tool and defined in `{first}`", t.name()))
                    });
                    continue;
                }
                tools.push(t);
            }
        }
        if !problems.is_empty() {
            return Err(Error::Load(problems));
        }
        Ok(Harness { spec, dir, tools })
    }
}

/// The `confusable_tool` message: both names and where each is defined.
pub(crate) fn confusable_message(name: &str, file: &str, other: &str, other_file: &str) -> String {
    format!(
        "tool `{name}` in `{file}` is confusable with tool `{other}` in `{other_file}` (equal under case folding or Unicode confusable skeletons); rename one"
    )
}

/// The `unpinned` message: the digest to pin, and the two ways to pin it.
fn unpinned_message(tool: &Tool) -> String {
    format!(
        "tool `{}` is not pinned and the harness requires pins (`spec.tools.require_pins`); add `definition_digest: \"{}\"` under `spec:` or run `harnessweaver tools pin`",
        tool.name(),
        tool.digest()
    )
}

/// One manifest file, read, parsed and checked on its own.
struct CheckedFile {
    /// The file relative to the harness directory.
    rel: String,
    /// Its problems, but not `duplicate_tool` (found afterwards, in file order).
    mcx: Checker,
    /// The written `metadata.name` when it is a valid name, with its position.
    name: Option<(String, Pos)>,
    /// The tool, and whether the manifest had no problem before it was built.
    tool: Option<(Tool, bool)>,
}

/// Reads, parses and checks one manifest file (all but the duplicate check).
fn check_manifest_file(dir: &Path, file: &Path, spec: &HarnessSpec) -> CheckedFile {
    let rel = relative(dir, file);
    let mut mcx = Checker::new(Some(rel.clone()));
    let mut name = None;
    let mut tool = None;
    match std::fs::read_to_string(file) {
        Err(e) => mcx.report("io_error", Pos::default(), "", format!("cannot read `{rel}`: {}", io_reason(&e))),
        Ok(text) => {
            let is_json = file.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
            match parse_text(&text, is_json) {
                Err(p) => mcx.extend(p),
                Ok(node) => {
                    let name_node = node.get("metadata").and_then(|m| m.get("name"));
                    if let Some(name_node) = name_node {
                        if let Some(written) = name_node.as_str().filter(|n| manifest::is_valid_name(n)) {
                            name = Some((written.to_string(), name_node.pos));
                        }
                    }
                    if let Some(mut parsed) = parse_manifest(&node, &mut mcx) {
                        check_mcp_server(&parsed.manifest, &node, spec, &mut mcx);
                        check_effect_contract(&parsed.manifest, &node, spec, &mut mcx);
                        super::process_paths::resolve_process(&mut parsed.manifest, &node, dir, &mut mcx);
                        let clean = mcx.problems.is_empty();
                        tool = Tool::build(parsed, Some(rel.clone()), Some(file.to_path_buf()), spec.tools.max_output_bytes, &mut mcx)
                            .map(|t| (t, clean));
                        if spec.tools.require_pins {
                            if let Some((t, _)) = tool.as_ref().filter(|(t, _)| t.pin() == manifest::PinState::Unpinned) {
                                let at = node.get("spec").map_or(node.pos, |s| s.pos);
                                mcx.report("unpinned", at, "spec.definition_digest", unpinned_message(t));
                            }
                        }
                    }
                }
            }
        }
    }
    CheckedFile { rel, mcx, name, tool }
}

fn check_mcp_server(m: &manifest::Manifest, node: &Node, spec: &HarnessSpec, cx: &mut Checker) {
    if m.transport != manifest::Transport::Mcp {
        return;
    }
    let Some(server) = &m.server else { return };
    let known = manifest::mcp_server_name(server).is_some_and(|n| spec.mcp_servers.contains_key(n));
    if !known {
        let pos = node.get("spec").and_then(|s| s.get("server")).map_or(node.pos, |n| n.pos);
        let declared: Vec<&str> = spec.mcp_servers.keys().map(String::as_str).collect();
        let hint = if declared.is_empty() { "none is declared".to_string() } else { format!("declared: `{}`", declared.join("`, `")) };
        cx.report("unknown_mcp_server", pos, "spec.server", format!("`{server}` names no server of `spec.mcp.servers` in harness.yaml ({hint})"));
    }
}

/// A tool that writes outside needs an effect contract unless the harness
/// opts out (`spec.effects.require_contract: false`), and its secret handles
/// must be mapped by the harness (issue 21).
fn check_effect_contract(m: &manifest::Manifest, node: &Node, spec: &HarnessSpec, cx: &mut Checker) {
    let spec_node = node.get("spec");
    if spec.effects.require_contract && manifest::needs_contract(m.side_effect) && m.effect == manifest::EffectField::Absent {
        let pos = spec_node.and_then(|s| s.get("side_effect")).map_or(node.pos, |n| n.pos);
        cx.report(
            "effect_contract_missing",
            pos,
            "spec.effect",
            manifest::missing_contract_message(&m.name, manifest::side_effect_name(m.side_effect)),
        );
    }
    for (i, handle) in m.secrets.iter().enumerate() {
        if !spec.secrets.sources.contains_key(handle) {
            let at = spec_node
                .and_then(|s| s.get("secrets"))
                .and_then(|l| match &l.value {
                    crate::yaml::NodeValue::Seq(items) => items.get(i),
                    _ => None,
                })
                .map_or(node.pos, |n| n.pos);
            cx.report("unknown_secret", at, &format!("spec.secrets[{i}]"), format!("`{handle}` is not mapped by `spec.secrets` in harness.yaml"));
        }
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string().to_lowercase(),
    }
}

/// Expands the manifest globs; each match must stay inside `dir` after
/// symlinks are resolved. Returns canonical file paths, each once, in glob
/// order, leaving out the harness file itself.
fn expand_globs(dir: &Path, globs: &[(String, Pos, String)], cx: &mut Checker, harness: Option<&Path>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut seen = HashSet::new();
    let mut resolver = Resolver::default();
    for (pattern, pos, path) in globs {
        let p = Path::new(pattern);
        if p.is_absolute() || p.components().any(|c| matches!(c, Component::Prefix(_) | Component::RootDir)) {
            cx.report("path_escape", *pos, path, format!("`{pattern}` must be relative to the harness directory"));
            continue;
        }
        let escaped_full = glob::Pattern::escape(&dir.to_string_lossy());
        let query = format!("{escaped_full}/{pattern}");
        let entries = match glob::glob_with(&query, glob::MatchOptions { require_literal_leading_dot: true, ..Default::default() }) {
            Ok(e) => e,
            Err(e) => {
                cx.report("invalid_value", *pos, path, format!("`{pattern}` is not a valid glob: {}", e.msg));
                continue;
            }
        };
        let mut matched = 0usize;
        let mut escaped = false;
        for entry in entries {
            let Ok(found) = entry else { continue };
            let Some((canonical, is_file)) = resolver.resolve(&found) else { continue };
            if !canonical.starts_with(dir) {
                if !escaped {
                    let shown = relative(dir, &found);
                    let how = if found.is_symlink() { "a link that leads" } else { "a file" };
                    cx.report("path_escape", *pos, path, format!("`{pattern}` matches `{shown}`, {how} outside the harness directory"));
                }
                escaped = true;
                continue;
            }
            // Directories are not manifests, and `*.yaml` beside harness.yaml
            // should not read harness.yaml as a tool.
            if !is_file || Some(canonical.as_path()) == harness {
                continue;
            }
            matched += 1;
            if seen.insert(canonical.clone()) {
                files.push(canonical);
            }
        }
        if matched == 0 && !escaped {
            cx.report("glob_no_match", *pos, path, format!("`{pattern}` matches no manifest file"));
        }
    }
    files
}

/// Resolves the files a glob matched to their canonical paths with one
/// `lstat` each: the directories they sit in are resolved once, not once per
/// file (a harness may hold thousands of manifests in one folder).
#[derive(Default)]
struct Resolver {
    dirs: HashMap<PathBuf, Option<PathBuf>>,
}

impl Resolver {
    /// The canonical path of `found` and whether it is a regular file (after
    /// links), or `None` when it cannot be resolved.
    fn resolve(&mut self, found: &Path) -> Option<(PathBuf, bool)> {
        let meta = found.symlink_metadata().ok()?;
        let whole = |p: &Path| {
            p.canonicalize().ok().map(|c| {
                let is_file = c.is_file();
                (c, is_file)
            })
        };
        match (found.parent(), found.file_name()) {
            // A link is followed to wherever it leads.
            _ if meta.file_type().is_symlink() => whole(found),
            (Some(parent), Some(name)) => {
                let dir = self.dirs.entry(parent.to_path_buf()).or_insert_with(|| parent.canonicalize().ok()).as_ref()?;
                Some((dir.join(name), meta.is_file()))
            }
            // `..` or a root.
            _ => whole(found),
        }
    }
}

/// Reads one policy layer file into `spec`, returning its problems.
fn load_layer_file(dir: &Path, lf: &LayerFile, harness_file: &str, spec: &mut HarnessSpec) -> Vec<Problem> {
    let mut hcx = Checker::new(Some(harness_file.to_string()));
    let target = dir.join(&lf.file);
    let escapes = Path::new(&lf.file).is_absolute() || Path::new(&lf.file).components().any(|c| matches!(c, Component::ParentDir));
    let canonical = target.canonicalize();
    match (&canonical, escapes) {
        (_, true) => hcx.report("path_escape", lf.pos, &lf.path, format!("`{}` must stay inside the harness directory", lf.file)),
        (Ok(c), false) if !c.starts_with(dir) => {
            hcx.report("path_escape", lf.pos, &lf.path, format!("`{}` leads outside the harness directory", lf.file));
        }
        (Err(e), false) => hcx.report("io_error", lf.pos, &lf.path, format!("cannot read `{}`: {}", lf.file, io_reason(e))),
        (Ok(c), false) => {
            let rel = relative(dir, c);
            let mut fcx = Checker::new(Some(rel.clone()));
            match std::fs::read_to_string(c) {
                Err(e) => fcx.report("io_error", Pos::default(), "", format!("cannot read `{rel}`: {}", io_reason(&e))),
                Ok(text) => match parse_text(&text, rel.ends_with(".json")) {
                    Err(p) => fcx.extend(p),
                    Ok(node) => {
                        if let Some(layer) = spec.layers.get_mut(lf.layer) {
                            let mut rules = Vec::new();
                            let runs = parse_layer_file(&node, &mut fcx, layer, lf.layer, &rel, &mut rules);
                            if let Some(runs) = runs {
                                let (lower, at) = super::runs::parse_runs(runs, &mut fcx, "spec.runs");
                                super::runs::narrow(&mut spec.runs, &lower, &at, &mut fcx);
                            }
                            // Keep the rules in layer order.
                            let at = spec.rules.iter().position(|r| r.layer > lf.layer).unwrap_or(spec.rules.len());
                            spec.rules.splice(at..at, rules);
                        }
                    }
                },
            }
            return fcx.take_sorted();
        }
    }
    hcx.take_sorted()
}

/// Loads a harness and returns its problems, never failing: for tools.
pub fn problems_of(path: &Path) -> Vec<Problem> {
    match Harness::load(path) {
        Ok(_) => Vec::new(),
        Err(e) => e.problems().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A harness of `n` manifests, some with problems (syntax, bad fields,
    /// duplicate names, a wrong pin) when `broken`.
    fn write_harness(root: &Path, n: usize, broken: bool) -> PathBuf {
        let _ = std::fs::remove_dir_all(root);
        std::fs::create_dir_all(root.join("tools")).unwrap();
        let schema = serde_json::json!({"type": "object", "properties": {"id": {"type": "string", "pattern": "^R-[0-9]+$"}}});
        for i in 0..n {
            // Every 7th broken manifest repeats an earlier one's name.
            let name = if broken && i % 7 == 6 { format!("tool_{:04}", i / 2) } else { format!("tool_{i:04}") };
            let description = format!("Tool number {i}.");
            let digest = crate::digest::definition_digest(&name, &description, &schema).unwrap();
            let digest = if broken && i % 11 == 3 { digest.replace('a', "b").replace('0', "1") } else { digest };
            let risk = if broken && i % 13 == 5 { "extreme" } else { "medium" };
            let mut text = format!(
                "apiVersion: harnessweaver/v1\nkind: Tool\nmetadata: {{ name: {name}, version: 1.0.0, owner: team }}\nspec:\n  definition_digest: \"{digest}\"\n  transport: http\n  url: https://svc.internal/{name}\n  description: {description}\n  input_schema: {schema}\n  side_effect: read\n  risk: {risk}\n  approval: {{ when: \"args.id == 'R-{i}'\" }}\n  timeout: 10s\n"
            );
            if broken && i % 17 == 9 {
                text.push_str("  bogus: [1, 2\n");
            }
            if broken && i % 19 == 4 {
                text.push_str("  approval_extra: 1\n  timeout: 5s\n");
            }
            std::fs::write(root.join("tools").join(format!("m{i:04}.yaml")), text).unwrap();
        }
        let harness = root.join("harness.yaml");
        std::fs::write(&harness, "apiVersion: harnessweaver/v1\nkind: Harness\nspec:\n  mode: test\n  tools:\n    manifests: [\"tools/*.yaml\"]\n")
            .unwrap();
        harness
    }

    #[test]
    fn a_runtime_from_a_loaded_harness_reads_no_file_again() {
        let root = std::env::temp_dir().join(format!("hw-read-once-{}", std::process::id()));
        let path = write_harness(&root, 3, false);
        let harness = Harness::load(&path).unwrap();
        // The files are gone: only what was read once remains.
        std::fs::remove_dir_all(&root).unwrap();
        let tool = harness.tool("tool_0001").unwrap();
        assert!(tool.validator().check(&serde_json::json!({"id": "R-12"})).is_none());
        assert_eq!(tool.validator().check(&serde_json::json!({"id": "x"})).map(|v| v.keyword), Some("pattern".to_string()));
        let runtime = crate::Runtime::from_harness(harness, crate::LoadOptions::default()).unwrap();
        let names: Vec<&str> = runtime.tools().map(Tool::name).collect();
        assert_eq!(names, ["tool_0000", "tool_0001", "tool_0002"]);
        assert!(crate::Runtime::load(&path, crate::LoadOptions::default()).is_err());
    }

    #[test]
    fn manifests_checked_in_parallel_load_as_one_after_another() {
        let root = std::env::temp_dir().join(format!("hw-parallel-load-{}", std::process::id()));
        let n = crate::parallel::PARALLEL_MIN_ITEMS * 2 + 5;
        let clean = write_harness(&root, n, false);
        let one = Harness::load_uncached(&clean, 1, true).unwrap();
        let many = Harness::load_uncached(&clean, 4, true).unwrap();
        assert_eq!(one.tools().len(), n);
        let summary =
            |h: &Harness| h.tools().iter().map(|t| (t.name().to_string(), t.file().map(str::to_string), t.digest().to_string())).collect::<Vec<_>>();
        assert_eq!(summary(&one), summary(&many));

        let broken = write_harness(&root, n, true);
        let one = Harness::load_uncached(&broken, 1, true).unwrap_err().problems().to_vec();
        let many = Harness::load_uncached(&broken, 3, true).unwrap_err().problems().to_vec();
        let _ = std::fs::remove_dir_all(&root);
        let codes: HashSet<&str> = one.iter().map(|p| p.code.as_str()).collect();
        assert!(codes.contains("duplicate_tool") && codes.contains("yaml_syntax") && codes.len() >= 4, "{codes:?}");
        assert_eq!(format!("{one:?}"), format!("{many:?}"));
    }
}
