//! Loading one manifest: text or a JSON-like value into a node tree, the
//! tree into a checked [`Manifest`], and the manifest into a [`Tool`] with
//! its definition digest and pin state. The harness loader
//! (`crate::harness`) reads files and globs and calls the same pieces.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::model::{PinState, DEFAULT_MAX_OUTPUT_BYTES};
use super::parse::{parse_manifest, ParsedManifest};
use super::tool::Tool;
use crate::check::Checker;
use crate::digest;
use crate::error::{Error, Problem};
use crate::validate::SchemaValidator;
use crate::yaml::{self, Node};

impl Tool {
    /// Parses one manifest given as a JSON-like value (a tool registered in code).
    /// `origin` names it in problems.
    pub fn from_manifest_value(value: &Value, origin: &str) -> Result<Tool, Error> {
        let node = Node::from_json(value);
        let mut cx = Checker::new(Some(origin.to_string()));
        let parsed = parse_manifest(&node, &mut cx);
        finish_one(parsed, cx)
    }

    /// Parses one manifest given as YAML or JSON text (JSON when it starts with `{`).
    pub fn from_manifest_text(text: &str, origin: &str) -> Result<Tool, Error> {
        let mut cx = Checker::new(Some(origin.to_string()));
        let is_json = origin.ends_with(".json") || text.trim_start().starts_with('{');
        let parsed = match parse_text(text, is_json) {
            Ok(node) => parse_manifest(&node, &mut cx),
            Err(problems) => {
                cx.extend(problems);
                None
            }
        };
        finish_one(parsed, cx)
    }

    /// Builds a tool from a checked manifest; `max_output_bytes` is the
    /// harness's `tools.max_output_bytes`.
    pub(crate) fn build(
        parsed: ParsedManifest,
        file: Option<String>,
        path: Option<PathBuf>,
        max_output_bytes: u64,
        cx: &mut Checker,
    ) -> Option<Tool> {
        let ParsedManifest { manifest, schema_pos, validator, output_validator, approval_when } = parsed;
        let digest =
            match digest::tool_definition_digest(&manifest.name, &manifest.description, &manifest.input_schema, manifest.output_schema.as_ref()) {
                Ok(d) => d,
                Err(e) => {
                    cx.report("invalid_schema", schema_pos, "spec.input_schema", format!("`spec.input_schema` cannot be pinned: {e}"));
                    return None;
                }
            };
        let pin = match &manifest.definition_digest {
            None => PinState::Unpinned,
            Some(p) if *p == digest => PinState::Pinned,
            Some(_) => PinState::Mismatched,
        };
        // Compiled once here (the parser compiled a schema it was given) and
        // shared with the governor, which validates arguments with it.
        let validator = match validator.map_or_else(|| SchemaValidator::compile(&manifest.input_schema), Ok) {
            Ok(v) => v,
            Err(message) => {
                cx.report("invalid_schema", schema_pos, "spec.input_schema", message);
                return None;
            }
        };
        Some(Tool { manifest, digest, pin, file, path, max_output_bytes, validator, output_validator, approval_when: approval_when.map(Arc::new) })
    }
}

fn finish_one(parsed: Option<ParsedManifest>, mut cx: Checker) -> Result<Tool, Error> {
    let origin = cx.file.clone();
    let tool = parsed.and_then(|p| Tool::build(p, origin.clone(), None, DEFAULT_MAX_OUTPUT_BYTES, &mut cx));
    match tool {
        Some(t) if cx.problems.is_empty() => Ok(t),
        _ => Err(Error::Load(nonempty(cx.take_sorted()))),
    }
}

pub(crate) fn nonempty(mut problems: Vec<Problem>) -> Vec<Problem> {
    if problems.is_empty() {
        problems.push(Problem::new("invalid_value", "the manifest could not be loaded"));
    }
    problems
}

/// Parses YAML or JSON text into a node tree.
pub(crate) fn parse_text(text: &str, is_json: bool) -> Result<Node, Vec<Problem>> {
    if is_json {
        yaml::parse_json(text)
    } else {
        yaml::parse_yaml(text)
    }
}
