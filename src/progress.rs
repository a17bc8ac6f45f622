//! Progress: an indicatif bar per model on a terminal, plain periodic lines
//! otherwise (CI logs), both showing done/total, pass rate, req/s and ETA.

use crate::output::errln;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

struct ModelProgress {
    name: String,
    total: u64,
    done: u64,
    passed: u64,
    bar: Option<ProgressBar>,
}

/// Progress of a whole run.
pub(crate) struct Progress {
    models: Vec<ModelProgress>,
    started: Instant,
    last_line: Instant,
    plain: bool,
    _multi: Option<MultiProgress>,
}

const PLAIN_EVERY: Duration = Duration::from_secs(5);

impl Progress {
    /// Progress for `(model, already done, total)`; bars only when stderr is a terminal and `enabled`.
    pub(crate) fn new(models: &[(String, u64, u64)], enabled: bool) -> Progress {
        let bars = enabled && std::io::stderr().is_terminal();
        let multi = bars.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        let style =
            // A wide bar takes what the fixed parts leave, so a line fits the terminal.
            ProgressStyle::with_template("{prefix:>16} [{wide_bar}] {pos}/{len} {msg} ETA {eta}")
                .expect("valid template")
                .progress_chars("=> ");
        let models = models
            .iter()
            .map(|(name, done, total)| ModelProgress {
                name: name.clone(),
                total: *total,
                done: *done,
                passed: 0,
                bar: multi.as_ref().map(|m| {
                    let bar = m.add(ProgressBar::new(*total));
                    bar.set_style(style.clone());
                    bar.set_prefix(name.chars().take(16).collect::<String>());
                    bar.set_position(*done);
                    bar
                }),
            })
            .collect();
        Progress {
            models,
            started: Instant::now(),
            last_line: Instant::now(),
            plain: enabled && !bars,
            _multi: multi,
        }
    }

    /// Counts one finished record for model `index`.
    pub(crate) fn record(&mut self, index: usize, passed: bool) {
        let elapsed = self.started.elapsed().as_secs_f64().max(1e-9);
        let m = &mut self.models[index];
        m.done += 1;
        m.passed += u64::from(passed);
        if let Some(bar) = &m.bar {
            bar.set_position(m.done);
            bar.set_message(format!(
                "pass {:.0}% {:.1}/s",
                100.0 * m.passed as f64 / m.done as f64,
                bar.position() as f64 / elapsed
            ));
        }
        if self.plain && self.last_line.elapsed() >= PLAIN_EVERY {
            self.last_line = Instant::now();
            self.print_lines();
        }
    }

    fn print_lines(&self) {
        let elapsed = self.started.elapsed().as_secs_f64().max(1e-9);
        for m in &self.models {
            let rate = m.done as f64 / elapsed;
            let eta = if rate > 0.0 {
                (m.total - m.done.min(m.total)) as f64 / rate
            } else {
                0.0
            };
            errln!(
                "{}: {}/{} ({:.0}%), pass {:.0}%, {:.1} req/s, ETA {:.0}s",
                m.name.chars().take(28).collect::<String>(),
                m.done,
                m.total,
                100.0 * m.done as f64 / m.total.max(1) as f64,
                100.0 * m.passed as f64 / m.done.max(1) as f64,
                rate,
                eta
            );
        }
    }

    /// Ends the bars.
    pub(crate) fn finish(&self) {
        for m in &self.models {
            if let Some(bar) = &m.bar {
                bar.finish();
            }
        }
        if self.plain {
            self.print_lines();
        }
    }
}
