//! Which parts of each variable an expression can read: what a host must
//! convert for an evaluation to give the same result as with the whole value.
//!
//! A chain of field selections from a variable (`args.customer.id`) reads
//! only that field of each map on the way; any other use of a value (a
//! comparison, `size`, `in`, an index, a macro's range, the expression's
//! result) reads all of it. A host that converts only the [`Need`]s of a
//! program (and nothing of a map but the fields named) gets the same outcome
//! and the same unevaluable reasons, and saves converting what no evaluation
//! can reach; a value that has no JSON form in a part no evaluation reads is
//! then not reported.

use super::parser::{Expr, Kind};

/// What an evaluation can read of one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// The whole value.
    Whole,
    /// Only these fields, when the value is a map (each with what is read of
    /// it); a value that is not a map is needed whole, since the evaluation
    /// reports its type.
    Fields(Vec<(String, Need)>),
}

impl Need {
    /// Marks `path` below this node as needed whole.
    fn mark(&mut self, path: &[&str]) {
        let Some((first, rest)) = path.split_first() else {
            *self = Need::Whole;
            return;
        };
        let Need::Fields(fields) = self else { return };
        if let Some((_, child)) = fields.iter_mut().find(|(name, _)| name == first) {
            child.mark(rest);
            return;
        }
        let mut child = Need::Fields(Vec::new());
        child.mark(rest);
        fields.push(((*first).to_string(), child));
    }
}

/// The needs of every variable slot of the tree at `root` (`slots` of them).
pub(crate) fn of(root: &Expr, slots: usize) -> Vec<Need> {
    let mut needs = vec![Need::Fields(Vec::new()); slots];
    visit(root, &mut needs);
    needs
}

/// The variable slot and field names of a selection chain (`args.a.b`), or
/// `None` when `e` is not one.
fn path(e: &Expr) -> Option<(u16, Vec<&str>)> {
    match &e.kind {
        Kind::Var(slot) => Some((*slot, Vec::new())),
        Kind::Select(operand, field) => {
            let (slot, mut fields) = path(operand)?;
            fields.push(field);
            Some((slot, fields))
        }
        _ => None,
    }
}

fn visit(e: &Expr, needs: &mut [Need]) {
    // A selection chain used as a value (or probed with `has`) needs its end whole.
    let chain = match &e.kind {
        Kind::Has(operand, field) => path(operand).map(|(slot, mut fields)| {
            fields.push(field);
            (slot, fields)
        }),
        _ => path(e),
    };
    if let Some((slot, fields)) = chain {
        if let Some(need) = needs.get_mut(usize::from(slot)) {
            need.mark(&fields);
        }
        return;
    }
    match &e.kind {
        Kind::Null
        | Kind::Bool(_)
        | Kind::Int(_)
        | Kind::Uint(_)
        | Kind::Double(_)
        | Kind::Str(_)
        | Kind::Var(_)
        | Kind::Local(_)
        | Kind::Const(_) => {}
        Kind::Select(inner, _) | Kind::Has(inner, _) | Kind::Not(inner) | Kind::Neg(inner) | Kind::MatchesConst(inner, _) => {
            visit(inner, needs);
        }
        Kind::Index(a, b) | Kind::Binary(_, a, b) => {
            visit(a, needs);
            visit(b, needs);
        }
        Kind::And(items) | Kind::Or(items) | Kind::List(items) | Kind::Call(_, items) => {
            items.iter().for_each(|item| visit(item, needs));
        }
        Kind::Cond(a, b, c) => {
            visit(a, needs);
            visit(b, needs);
            visit(c, needs);
        }
        Kind::Map(entries) => entries.iter().for_each(|(k, v)| {
            visit(k, needs);
            visit(v, needs);
        }),
        Kind::Macro(c) => {
            visit(&c.range, needs);
            if let Some(filter) = &c.filter {
                visit(filter, needs);
            }
            visit(&c.body, needs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Need::{self, Fields, Whole};
    use crate::cel_lite::compile;

    fn needs(expr: &str) -> Vec<(String, Need)> {
        let program = compile(expr).unwrap();
        program.names().iter().cloned().zip(program.needs().iter().cloned()).collect()
    }

    fn fields(items: &[(&str, Need)]) -> Need {
        Fields(items.iter().map(|(k, v)| ((*k).to_string(), v.clone())).collect())
    }

    #[test]
    fn selections_need_their_ends() {
        assert_eq!(
            needs("args.amount_usd > 100 && !('finance' in principal.roles) || tool.risk == 'critical'"),
            vec![
                ("args".to_string(), fields(&[("amount_usd", Whole)])),
                ("principal".to_string(), fields(&[("roles", Whole)])),
                ("tool".to_string(), fields(&[("risk", Whole)])),
            ]
        );
        assert_eq!(
            needs("args.a.b == 1 && has(args.a.c) && args.d.e.size() > 0"),
            vec![("args".to_string(), fields(&[("a", fields(&[("b", Whole), ("c", Whole)])), ("d", fields(&[("e", Whole)]))]))]
        );
    }

    #[test]
    fn other_uses_need_the_whole_value() {
        for expr in [
            "args",
            "size(args) > 1",
            "args.a == 1 && args == {}",
            "args['a'] == 1",
            "args.exists(k, k == 'a')",
            "args.a == 1 || has(args.a) || args.a.b == 2 || args.a.c",
            "[args][0].a == 1",
        ] {
            let got = needs(expr);
            let whole_or_one_level = |n: &Need| match n {
                Whole => true,
                Fields(f) => f.iter().all(|(_, c)| *c == Whole),
            };
            assert!(got.iter().all(|(_, n)| whole_or_one_level(n)), "{expr}: {got:?}");
        }
        assert_eq!(needs("args.a == 1 || args == {}"), vec![("args".to_string(), Whole)]);
        assert_eq!(needs("args.a.b == 1 || args.a == {}"), vec![("args".to_string(), fields(&[("a", Whole)]))]);
        assert_eq!(needs("args.items.all(i, i.x > 0)"), vec![("args".to_string(), fields(&[("items", Whole)]))]);
    }
}
