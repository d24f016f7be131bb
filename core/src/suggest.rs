//! "Did you mean": the nearest known name to a mistyped one (issue 18,
//! item 5), for unknown tools, unknown manifest and harness fields, and
//! unexpected arguments. One rule for every language: the core writes the
//! hint into the message, so Python, Node and Swift show the same text.
//!
//! Near means an optimal-string-alignment distance (insertions, deletions,
//! substitutions and swaps of neighbours, ignoring ASCII case) of at most a
//! third of the longer name, and at least 1; the nearest wins, ties going to
//! the earlier candidate. Names longer than [`MAX_NAME_CHARS`] get no hint
//! (the distance is quadratic).

/// Names longer than this (in characters) are not compared.
const MAX_NAME_CHARS: usize = 64;

/// The candidate nearest to `name`, if one is near enough to be a typo of it.
/// `name` itself among the candidates is never suggested.
pub fn nearest<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let typed: Vec<char> = name.chars().map(|c| c.to_ascii_lowercase()).collect();
    if typed.is_empty() || typed.len() > MAX_NAME_CHARS {
        return None;
    }
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        if candidate == name {
            continue;
        }
        let known: Vec<char> = candidate.chars().map(|c| c.to_ascii_lowercase()).collect();
        if known.len() > MAX_NAME_CHARS {
            continue;
        }
        let limit = (typed.len().max(known.len()) / 3).max(1);
        if typed.len().abs_diff(known.len()) > limit {
            continue;
        }
        let d = distance(&typed, &known);
        if d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, c)| c)
}

/// `; did you mean `x`?` for the nearest candidate, or nothing.
pub fn hint<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> String {
    nearest(name, candidates).map_or_else(String::new, |c| format!("; did you mean `{c}`?"))
}

/// Optimal string alignment distance of two short strings.
fn distance(a: &[char], b: &[char]) -> usize {
    // Rows i-2 and i-1 of the usual table; row i is built from them.
    let mut two: Vec<usize> = vec![0; b.len() + 1];
    let mut one: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut row = Vec::with_capacity(b.len() + 1);
        row.push(i + 1);
        for (j, &cb) in b.iter().enumerate() {
            let at = |r: &[usize], k: usize| r.get(k).copied().unwrap_or(usize::MAX - 1);
            let mut d = (at(&one, j + 1) + 1).min(at(&row, j) + 1).min(at(&one, j) + usize::from(ca != cb));
            let swapped = i > 0 && j > 0 && a.get(i - 1) == Some(&cb) && b.get(j - 1) == Some(&ca);
            if swapped {
                d = d.min(at(&two, j - 1) + 1);
            }
            row.push(d);
        }
        two = std::mem::replace(&mut one, row);
    }
    one.get(b.len()).copied().unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(a: &str, b: &str) -> usize {
        distance(&a.chars().collect::<Vec<_>>(), &b.chars().collect::<Vec<_>>())
    }

    #[test]
    fn distance_counts_edits_and_neighbour_swaps() {
        assert_eq!(d("", ""), 0);
        assert_eq!(d("abc", ""), 3);
        assert_eq!(d("", "ab"), 2);
        assert_eq!(d("timeout", "timout"), 1);
        assert_eq!(d("timeout", "tiemout"), 1);
        assert_eq!(d("kitten", "sitting"), 3);
        assert_eq!(d("ca", "abc"), 3);
        assert_eq!(d("refund", "refund"), 0);
    }

    #[test]
    fn nearest_is_a_typo_not_any_name() {
        let fields = ["timeout_ms", "transport", "risk", "side_effect", "input_schema"];
        assert_eq!(nearest("timout_ms", fields), Some("timeout_ms"));
        assert_eq!(nearest("Input_Schema", fields), Some("input_schema"));
        assert_eq!(nearest("rsk", fields), Some("risk"));
        assert_eq!(nearest("colour", fields), None);
        assert_eq!(nearest("", fields), None);
        assert_eq!(nearest("risk", ["risk"]), None);
        // The nearer wins; ties go to the first.
        assert_eq!(nearest("lookup_ordr", ["lookup_orders", "lookup_order"]), Some("lookup_order"));
        assert_eq!(nearest("ab", ["ax", "ay"]), Some("ax"));
        assert_eq!(hint("refnd", ["refund"]), "; did you mean `refund`?");
        assert_eq!(hint("zzz", ["refund"]), "");
        let long = "x".repeat(MAX_NAME_CHARS + 1);
        assert_eq!(nearest(&long, [long.get(1..).unwrap_or_default()]), None);
    }
}
