//! De-duplication of near-identical questions: normalized text (case,
//! punctuation, spacing) compared by normalized Levenshtein similarity.
//! Questions naming different numbers ("in 1941?", "in 1942?") are never
//! duplicates, however similar. Of each group the best-rated pair stays
//! (the earliest on ties).

/// Lowercase words without punctuation, single-spaced.
pub(crate) fn normalize(question: &str) -> String {
    question
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The digit runs of a normalized question, in order.
fn numbers(normalized: &str) -> Vec<&str> {
    normalized
        .split(|c: char| !c.is_ascii_digit())
        .filter(|n| !n.is_empty())
        .collect()
}

/// Which items to keep, for `(question, rating)` items: an item goes when a
/// better-rated (or equal and earlier) kept one has a question at least
/// `threshold` similar.
pub(crate) fn keep(items: &[(&str, f64)], threshold: f64) -> Vec<bool> {
    let normalized: Vec<String> = items.iter().map(|(q, _)| normalize(q)).collect();
    let mut order: Vec<usize> = (0..items.len()).collect();
    // Stable: equal ratings keep document order.
    order.sort_by(|&a, &b| items[b].1.total_cmp(&items[a].1));
    let mut kept: Vec<usize> = Vec::new();
    let mut exact = std::collections::HashSet::new();
    let mut keep = vec![false; items.len()];
    for i in order {
        let q = &normalized[i];
        if exact.contains(q.as_str())
            || kept.iter().any(|&k| {
                numbers(q) == numbers(&normalized[k])
                    && strsim::normalized_levenshtein(q, &normalized[k]) >= threshold
            })
        {
            continue;
        }
        exact.insert(q.as_str());
        kept.push(i);
        keep[i] = true;
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_duplicates_go_and_the_best_rated_stays() {
        let items = [
            ("Что такое фотосинтез?", 6.0),
            ("Что такое  фотосинтез", 9.0),
            ("What is photosynthesis?", 7.0),
            ("Что такое фотосинтезы?", 5.0),
            ("Где растёт клён?", 5.0),
            ("What happened in 1941?", 5.0),
            ("What happened in 1942?", 5.0),
        ];
        assert_eq!(
            keep(&items, 0.9),
            [false, true, true, false, true, true, true]
        );
        assert_eq!(
            keep(&items, 1.0),
            [false, true, true, true, true, true, true]
        );
        assert_eq!(normalize("  Hello,   World?! "), "hello world");
    }
}
