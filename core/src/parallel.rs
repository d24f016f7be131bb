//! Loading work spread over the machine's cores: a harness of thousands of
//! manifests is read, parsed and checked, and its governor built, in
//! contiguous slices on scoped threads, with results in the input's order so
//! a load reports exactly what checking one item after another would.

use crate::validate;

/// Below this many items the work stays on the calling thread.
pub(crate) const PARALLEL_MIN_ITEMS: usize = 64;

/// How many threads a load uses: the machine's cores, at most 16.
pub(crate) fn parallelism() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(16))
}

/// `items.iter().map(f).collect()`, on up to `threads` threads when there
/// are at least [`PARALLEL_MIN_ITEMS`] items. Each thread starts with the
/// calling thread's compiled schemas (see [`validate::with_compile_cache`])
/// and hands back what it compiled, so a load compiles each distinct schema
/// at most once per thread. A panic in `f` is raised again here.
pub(crate) fn map_in_order<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if threads <= 1 || items.len() < PARALLEL_MIN_ITEMS {
        return items.iter().map(&f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let known = validate::compiled_schemas();
    let (f, known) = (&f, &known);
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    validate::with_compile_cache(|| {
                        validate::add_compiled_schemas(known.clone());
                        let out: Vec<R> = part.iter().map(f).collect();
                        (out, validate::compiled_schemas())
                    })
                })
            })
            .collect();
        handles.into_iter().map(std::thread::ScopedJoinHandle::join).collect::<Vec<_>>()
    });
    let mut out = Vec::with_capacity(items.len());
    for result in results {
        match result {
            Ok((mut part, compiled)) => {
                validate::add_compiled_schemas(compiled);
                out.append(&mut part);
            }
            Err(payload) => std::panic::resume_unwind(payload),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_on_any_number_of_threads() {
        let items: Vec<usize> = (0..PARALLEL_MIN_ITEMS * 3 + 1).collect();
        let expected: Vec<usize> = items.iter().map(|i| i * 2).collect();
        for threads in [1, 2, 3, 7] {
            assert_eq!(map_in_order(&items, threads, |i| i * 2), expected);
        }
    }
}
