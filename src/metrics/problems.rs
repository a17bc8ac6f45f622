//! The samples of many problems (instances), kept compact: one small row and
//! one score per sample in flat columns, instead of a map entry and two
//! vectors per problem, so 100,000 records cost a few megabytes.
//!
//! Rows come in the order added; [`Problems::settle`] sorts them by (spec,
//! instance) when they did not already come that way (a journal is read in
//! that order), keeping each problem's samples in the order added.

/// What a [`Problems`] keeps of each sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Keep {
    /// Only the pass and sample counts (a model's totals, whose problems are its cells').
    Counts,
    /// Outcomes and scores, no answers (no `[sampling]` plan votes on them).
    Outcomes,
    /// Everything, with the clipped answers that majority voting compares.
    #[default]
    Answers,
}

/// One sample's place: its problem, its sample index and whether it passed.
#[derive(Debug, Clone, Copy)]
struct Row {
    instance: u64,
    sample: u32,
    /// Index into [`Problems::specs`].
    spec: u16,
    passed: bool,
}

/// The samples of every problem seen, with pass counts.
#[derive(Debug, Clone)]
pub(crate) struct Problems {
    keep: Keep,
    /// Spec ids, in first-seen order (an accumulator usually sees one).
    specs: Vec<String>,
    rows: Vec<Row>,
    /// Each row's score (a column of its own, so a problem's scores are one slice).
    scores: Vec<f64>,
    /// Each row's clipped answer, when kept.
    answers: Vec<Option<Box<str>>>,
    /// Whether `rows` are in (spec, instance) order.
    sorted: bool,
    /// Samples seen and samples passed, whatever is kept.
    total: u64,
    passed: u64,
}

impl Default for Problems {
    fn default() -> Self {
        Problems::new(Keep::default())
    }
}

impl Problems {
    /// No problems yet, keeping `keep` of each sample.
    pub(crate) fn new(keep: Keep) -> Problems {
        Problems {
            keep,
            specs: Vec::new(),
            rows: Vec::new(),
            scores: Vec::new(),
            answers: Vec::new(),
            sorted: true,
            total: 0,
            passed: 0,
        }
    }

    /// Adds one sample's outcome (`answer` already clipped).
    pub(crate) fn add(
        &mut self,
        (spec, instance): (&str, u64),
        sample: u32,
        answer: Option<&str>,
        passed: bool,
        score: f64,
    ) {
        self.total += 1;
        self.passed += u64::from(passed);
        if self.keep == Keep::Counts {
            return;
        }
        let spec = match self.specs.iter().position(|s| s == spec) {
            Some(i) => i,
            None => {
                self.specs.push(spec.to_owned());
                self.specs.len() - 1
            }
        };
        let spec = u16::try_from(spec).expect("fewer than 65,536 specs per accumulator");
        let row = Row {
            instance,
            sample,
            spec,
            passed,
        };
        if let Some(last) = self.rows.last() {
            self.sorted &= self.key(last) <= self.key(&row);
        }
        self.rows.push(row);
        self.scores.push(score);
        if self.keep == Keep::Answers {
            self.answers.push(answer.map(Box::from));
        }
    }

    fn key(&self, row: &Row) -> (&str, u64) {
        (&self.specs[usize::from(row.spec)], row.instance)
    }

    /// Samples seen.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Samples that passed.
    pub(crate) fn passed(&self) -> u64 {
        self.passed
    }

    /// Sorts the rows by (spec, instance) unless they came that way; each
    /// problem's samples stay in the order added.
    pub(crate) fn settle(&mut self) {
        if self.sorted {
            return;
        }
        let mut order: Vec<usize> = (0..self.rows.len()).collect();
        order.sort_by(|&a, &b| self.key(&self.rows[a]).cmp(&self.key(&self.rows[b])));
        self.rows = order.iter().map(|&i| self.rows[i]).collect();
        self.scores = order.iter().map(|&i| self.scores[i]).collect();
        if !self.answers.is_empty() {
            self.answers = order.iter().map(|&i| self.answers[i].take()).collect();
        }
        self.sorted = true;
    }

    /// Each problem in (spec, instance) order; the rows must be settled.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Problem<'_>> + Clone {
        assert!(self.sorted, "Problems::settle before reading");
        let mut start = 0;
        std::iter::from_fn(move || {
            let first = self.rows.get(start)?;
            let len = self.rows[start..]
                .iter()
                .take_while(|r| r.spec == first.spec && r.instance == first.instance)
                .count();
            let range = start..start + len;
            start += len;
            Some(Problem {
                spec: &self.specs[usize::from(first.spec)],
                instance: first.instance,
                rows: &self.rows[range.clone()],
                scores: &self.scores[range.clone()],
                answers: self.answers.get(range).unwrap_or_default(),
            })
        })
    }

    /// The scores of `instance`'s samples (of the first spec holding it); the rows must be settled.
    pub(crate) fn scores_of(&self, instance: u64) -> Option<&[f64]> {
        let spec = self.rows.first()?.spec;
        let at = |r: &Row| (r.spec != spec, r.instance);
        let lo = self.rows.partition_point(|r| at(r) < (false, instance));
        let hi = self.rows.partition_point(|r| at(r) <= (false, instance));
        (lo < hi).then(|| &self.scores[lo..hi])
    }
}

/// One problem's samples, in the order added.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Problem<'a> {
    /// Its spec id.
    pub spec: &'a str,
    /// Its instance.
    pub instance: u64,
    rows: &'a [Row],
    scores: &'a [f64],
    /// Empty when answers are not kept.
    answers: &'a [Option<Box<str>>],
}

impl<'a> Problem<'a> {
    /// The samples' scores, in the order added.
    pub(crate) fn scores(&self) -> &'a [f64] {
        self.scores
    }

    /// Whether the problem is one pass/fail sample: one sample scoring exactly 1 when
    /// it passed and 0 when not, so a pass rate (Wilson, McNemar) describes it.
    pub(crate) fn is_pass_fail(&self) -> bool {
        match (self.rows, self.scores) {
            ([row], [score]) => *score == f64::from(u8::from(row.passed)),
            _ => false,
        }
    }

    /// Samples seen.
    pub(crate) fn n_total(&self) -> u64 {
        self.rows.len() as u64
    }

    /// Samples that passed.
    pub(crate) fn n_correct(&self) -> u64 {
        self.rows.iter().filter(|r| r.passed).count() as u64
    }

    /// Positions of the samples in sample order (ties in the order added).
    fn by_sample(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.rows.len()).collect();
        order.sort_by_key(|&i| self.rows[i].sample);
        order
    }

    /// The extracted answers in sample order (none when answers are not kept).
    pub(crate) fn answers(&self) -> Vec<Option<String>> {
        let at = |i: usize| {
            self.answers
                .get(i)
                .and_then(|a| a.as_deref().map(str::to_owned))
        };
        self.by_sample().into_iter().map(at).collect()
    }

    /// Whether the majority answer passed: the most frequent extracted answer
    /// (ties to the one seen at the lowest sample) is taken; no answer never wins.
    pub(crate) fn majority_passed(&self) -> bool {
        let mut votes: Vec<(&str, u64, bool)> = Vec::new();
        for i in self.by_sample() {
            let Some(a) = self
                .answers
                .get(i)
                .and_then(|a| a.as_deref())
                .map(str::trim)
            else {
                continue;
            };
            let passed = self.rows[i].passed;
            match votes.iter_mut().find(|v| v.0 == a) {
                Some(v) => {
                    v.1 += 1;
                    v.2 |= passed;
                }
                None => votes.push((a, 1, passed)),
            }
        }
        let mut best: Option<&(&str, u64, bool)> = None;
        for v in &votes {
            if best.is_none_or(|b| v.1 > b.1) {
                best = Some(v);
            }
        }
        best.is_some_and(|b| b.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsorted_rows_settle_by_key_keeping_each_problems_order() {
        let mut p = Problems::default();
        p.add(("b", 0), 0, Some("x"), true, 1.0);
        p.add(("a", 2), 1, Some("y"), false, 0.25);
        p.add(("a", 2), 0, None, true, 0.5);
        p.add(("a", 1), 0, Some("z"), true, 1.0);
        p.settle();
        let seen: Vec<_> = p
            .iter()
            .map(|q| (q.spec, q.instance, q.scores().to_vec(), q.answers()))
            .collect();
        assert_eq!(
            seen,
            [
                ("a", 1, vec![1.0], vec![Some("z".to_owned())]),
                ("a", 2, vec![0.25, 0.5], vec![None, Some("y".to_owned())]),
                ("b", 0, vec![1.0], vec![Some("x".to_owned())]),
            ]
        );
        assert_eq!((p.total(), p.passed()), (4, 3));
        assert_eq!(p.scores_of(2), Some(&[0.25, 0.5][..]));
        assert_eq!(p.scores_of(3), None);
    }

    #[test]
    fn counts_keep_no_rows() {
        let mut p = Problems::new(Keep::Counts);
        p.add(("a", 0), 0, Some("x"), true, 1.0);
        assert_eq!((p.total(), p.passed(), p.iter().count()), (1, 1, 0));
    }
}
