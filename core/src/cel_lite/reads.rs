//! What an evaluation can read of each variable, so that a host converts only
//! that: the rule every binding shares.
//!
//! A chain of field selections from a variable (`args.customer.id`) reads
//! only that field of each map on the way; any other use of a value (a
//! comparison, `size`, `in`, an index, a method, a macro's range, the
//! expression's result) reads all of it. The parser marks each chain as it
//! ends. A host gathers one [`Part`] per [`Read`] of
//! [`Program::reads`](super::Program::reads) and evaluates over them
//! ([`Program::evaluate_parts`](super::Program::evaluate_parts)): the same
//! outcome and reasons as with the whole values, and a value with no JSON
//! form in a part no evaluation reads is never converted, so never reported.

use serde_json::Value;

/// What an evaluation can read of one value (the parser's tree of reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Need {
    /// The whole value.
    Whole,
    /// Only these fields, when the value is a map (each with what is read of it).
    Fields(Vec<(String, Need)>),
}

impl Default for Need {
    fn default() -> Self {
        Need::Fields(Vec::new())
    }
}

impl Need {
    /// Marks `path` below this node as read whole.
    pub(crate) fn mark(&mut self, path: &[String]) {
        let Some((first, rest)) = path.split_first() else {
            *self = Need::Whole;
            return;
        };
        let Need::Fields(fields) = self else { return };
        if let Some((_, child)) = fields.iter_mut().find(|(name, _)| name == first) {
            child.mark(rest);
            return;
        }
        let mut child = Need::default();
        child.mark(rest);
        fields.push((first.clone(), child));
    }
}

/// One variable or field an evaluation may read; [`Program::reads`](super::Program::reads)
/// lists them parents first (a variable, then its fields, depth first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// The variable's or the field's name.
    pub name: String,
    /// The index of the map this field is read from; `None` for a variable.
    pub parent: Option<usize>,
    /// How far below its variable it sits (0 for the variable).
    pub depth: usize,
    /// Read whole (converted as it is); otherwise only the fields listed
    /// after it are read, when the value is a map.
    pub whole: bool,
}

/// What a host gathered for one [`Read`].
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Part {
    /// Not there: the variable is unbound, the field absent (or its map was
    /// not gathered field by field).
    #[default]
    Absent,
    /// A map read field by field (only for a read that is not `whole`): its
    /// fields are the parts of the reads that name it as their parent.
    Map,
    /// The value, converted whole (also a read that is not `whole` whose value
    /// is not a map: the evaluation reports its type).
    Value(Value),
}

/// The reads of every name (in slot order), flattened.
pub(crate) fn flatten(names: &[String], needs: &[Need]) -> Vec<Read> {
    fn walk(out: &mut Vec<Read>, name: &str, need: &Need, parent: Option<usize>, depth: usize) {
        let at = out.len();
        out.push(Read { name: name.to_string(), parent, depth, whole: *need == Need::Whole });
        if let Need::Fields(fields) = need {
            fields.iter().for_each(|(field, child)| walk(out, field, child, Some(at), depth + 1));
        }
    }
    let mut out = Vec::new();
    names.iter().zip(needs).for_each(|(name, need)| walk(&mut out, name, need, None, 0));
    out
}

/// Whether `parts` fit `reads`: one each, a map only where fields are read,
/// nothing below a part that is not a map.
pub(crate) fn fit(reads: &[Read], parts: &[Part]) -> bool {
    reads.len() == parts.len()
        && reads.iter().zip(parts).all(|(read, part)| {
            let parent_is_map = read.parent.is_none_or(|p| matches!(parts.get(p), Some(Part::Map)));
            match part {
                Part::Absent => true,
                Part::Map => !read.whole && parent_is_map,
                Part::Value(_) => parent_is_map,
            }
        })
}

#[cfg(test)]
mod tests {
    use crate::cel_lite::compile;

    /// The reads as `name[/]` (`/` when read field by field), indented by depth.
    fn reads(expr: &str) -> Vec<String> {
        let program = compile(expr).unwrap();
        let reads = program.reads();
        for (i, read) in reads.iter().enumerate() {
            let parent = read.parent.map(|p| (p < i, reads[p].depth + 1, reads[p].whole));
            assert!(parent.is_none_or(|(before, depth, whole)| before && depth == read.depth && !whole), "{expr}: {reads:?}");
        }
        reads.iter().map(|r| format!("{}{}{}", "  ".repeat(r.depth), r.name, if r.whole { "" } else { "/" })).collect()
    }

    #[test]
    fn selections_read_their_ends() {
        assert_eq!(
            reads("args.amount_usd > 100 && !('finance' in principal.roles) || tool.risk == 'critical'"),
            ["args/", "  amount_usd", "principal/", "  roles", "tool/", "  risk"]
        );
        assert_eq!(reads("args.a.b == 1 && has(args.a.c) && args.d.e.size() > 0"), ["args/", "  a/", "    b", "    c", "  d/", "    e"]);
        assert_eq!(reads("1 + 2"), Vec::<String>::new());
    }

    #[test]
    fn other_uses_read_the_whole_value() {
        for (expr, want) in [
            ("args", &["args"][..]),
            ("size(args) > 1", &["args"]),
            ("args.a == 1 && args == {}", &["args"]),
            ("args.a == 1 || args == {}", &["args"]),
            ("args['a'] == 1", &["args"]),
            ("args.exists(k, k == 'a')", &["args"]),
            ("[args][0].a == 1", &["args"]),
            ("(args).a == 1", &["args"]),
            ("args.a == 1 || has(args.a) || args.a.b == 2 || args.a.c", &["args/", "  a"]),
            ("args.a.b == 1 || args.a == {}", &["args/", "  a"]),
            ("args.items.all(i, i.x > 0)", &["args/", "  items"]),
            ("args.a[0].b == 1", &["args/", "  a"]),
        ] {
            assert_eq!(reads(expr), want, "{expr}");
        }
    }
}
