//! The harness (`harness.yaml`, `kind: Harness`) and loading it with its manifests.
//!
//! STUB: the loader work replaces this. The public signatures are the
//! contract the bindings code against.

use std::path::Path;

use crate::error::{Error, Problem};
use crate::manifest::Tool;

/// A loaded harness: its settings and every tool's manifest.
#[derive(Debug, Clone)]
pub struct Harness {
    tools: Vec<Tool>,
}

impl Harness {
    /// Loads `harness.yaml` and every manifest it names, reporting every problem at once.
    pub fn load(path: impl AsRef<Path>) -> Result<Harness, Error> {
        let path = path.as_ref();
        Err(Error::Load(vec![Problem::new("not_implemented", format!("cannot load `{}` yet", path.display()))]))
    }

    /// The tools, in the order their manifests were found.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name() == name)
    }
}
