//! The error classes a host raises, from the core's typed codes: the base,
//! one class per error family ([`Error::kind`]), cel-lite's two, and the
//! refusal classes ([`RefusalClass`], each with its step). A binding builds
//! its classes natively from [`ErrorClass::ALL`] (Python's exception types),
//! so a class added here cannot leave a language behind.

use crate::codes::{ClassExtra, Decision, RefusalClass, Step};
use crate::error::Error;

/// One error class a host raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The base of every error (`HarnessweaverError`).
    Base,
    /// A harness or manifest failed to load (`Error::Load`).
    Load,
    /// A value with no portable JSON form (`Error::Value`).
    InvalidValue,
    /// A bad argument from the caller (`Error::InvalidArgument`).
    InvalidArgument,
    /// A cel-lite expression did not compile.
    CelCompile,
    /// A cel-lite expression could not be evaluated.
    CelUnevaluable,
    /// A refused or pending call.
    Refusal(RefusalClass),
}

/// The classes that are not refusal classes, the base first.
const FAMILIES: [ErrorClass; 6] =
    [ErrorClass::Base, ErrorClass::Load, ErrorClass::InvalidValue, ErrorClass::InvalidArgument, ErrorClass::CelCompile, ErrorClass::CelUnevaluable];

impl ErrorClass {
    /// Every class, each parent before its children.
    pub fn all() -> impl Iterator<Item = ErrorClass> {
        FAMILIES.into_iter().chain(RefusalClass::ALL.iter().map(|c| Self::Refusal(*c)))
    }

    /// The class name, as Python and JavaScript spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Base => "HarnessweaverError",
            Self::Load => "LoadError",
            Self::InvalidValue => "InvalidValueError",
            Self::InvalidArgument => "InvalidArgumentError",
            Self::CelCompile => "CompileError",
            Self::CelUnevaluable => "Unevaluable",
            Self::Refusal(c) => c.name(),
        }
    }

    /// The submodule the class belongs to (`cel_lite`), `None` for the package itself.
    pub const fn module(self) -> Option<&'static str> {
        match self {
            Self::CelCompile | Self::CelUnevaluable => Some("cel_lite"),
            _ => None,
        }
    }

    /// The parent class; `None` for the base (whose parent is the language's own exception or error class).
    pub const fn parent(self) -> Option<ErrorClass> {
        match self {
            Self::Base => None,
            Self::Refusal(c) => match c.parent() {
                Some(p) => Some(Self::Refusal(p)),
                None => Some(Self::Base),
            },
            _ => Some(Self::Base),
        }
    }

    /// The class's doc line.
    pub const fn doc(self) -> &'static str {
        match self {
            Self::Base => "Base class of every harnessweaver error; `.code` is its stable snake_case code.",
            Self::Load => "A harness or manifest failed to load; `.problems` lists every problem found.",
            Self::InvalidValue => "A value with no portable JSON form (NaN, a huge integer, nesting too deep, a non-string key).",
            Self::InvalidArgument => "A bad argument from the caller.",
            Self::CelCompile => {
                "A cel-lite expression did not compile: `.code`, `.message`, `.line`, `.column`; `str()` shows the line with a caret."
            }
            Self::CelUnevaluable => "A cel-lite expression could not be evaluated; `.reason` says which part failed.",
            Self::Refusal(c) => c.doc(),
        }
    }

    /// The step a refusal class stands for.
    pub const fn step(self) -> Option<Step> {
        match self {
            Self::Refusal(c) => c.step(),
            _ => None,
        }
    }

    /// Extra read-only attributes the class exposes, read from the call's result.
    pub const fn extras(self) -> &'static [ClassExtra] {
        match self {
            Self::Refusal(c) => c.extras(),
            _ => &[],
        }
    }

    /// Whether it is the base of the refusal classes (built from a call's result).
    pub const fn is_refusal_base(self) -> bool {
        matches!(self, Self::Refusal(c) if c.parent().is_none())
    }

    /// The class an error raises as.
    pub fn of(error: &Error) -> Self {
        match error {
            Error::Load(_) => Self::Load,
            Error::Value { .. } => Self::InvalidValue,
            Error::InvalidArgument { .. } => Self::InvalidArgument,
            Error::Io { .. } => Self::Base,
        }
    }

    /// The class a finished call raises as, when asked to raise: none for an allowed call.
    pub fn of_call(decision: Decision, step: Option<Step>) -> Option<Self> {
        RefusalClass::of(decision, step).map(Self::Refusal)
    }

    /// Its position in [`ErrorClass::all`], for a binding that keeps its classes in that order.
    pub fn index(self) -> usize {
        Self::all().position(|c| c == self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parent_comes_before_its_children_and_names_are_unique() {
        let all: Vec<ErrorClass> = ErrorClass::all().collect();
        for (i, c) in all.iter().enumerate() {
            assert_eq!(c.index(), i);
            if let Some(p) = c.parent() {
                assert!(p.index() < i, "{} before {}", p.name(), c.name());
            }
        }
        let mut names: Vec<&str> = all.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len());
        assert_eq!(ErrorClass::of(&Error::value("x", "y")), ErrorClass::InvalidValue);
    }
}
