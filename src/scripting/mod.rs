//! The sandboxed Rhai engine shared by generation scripts, dataset `map`
//! scripts and `script` rules, and the seeded RNG those scripts call.
//!
//! Built from `Engine::new_raw()` with only pure packages: no file, network,
//! process, module loading or clock access, and hard limits on operations,
//! call depth and value sizes so a runaway script fails fast.
//!
//! A leaf of the spec path: it imports nothing from the rest of the crate.

use rhai::packages::{
    ArithmeticPackage, BasicArrayPackage, BasicFnPackage, BasicIteratorPackage, BasicMapPackage,
    BasicMathPackage, BasicStringPackage, LanguageCorePackage, LogicPackage, MoreStringPackage,
    Package,
};
use rhai::{AST, Dynamic, Engine, EvalAltResult, ParseError, Position, Scope};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub(crate) mod rng;
pub(crate) mod value;

use rng::ScriptRng;

/// Default operation budget per script run: about 50 ms of work in a release build.
pub(crate) const DEFAULT_MAX_OPERATIONS: u64 = 1_000_000;

/// The most operations a spec may allow one script run (`max_operations`):
/// about 2.5 s of work in a release build.
pub(crate) const MAX_OPERATIONS_CEILING: u64 = 50_000_000;

/// Why a spec's `max_operations` cannot be used, if it cannot.
pub(crate) fn max_operations_problem(max_operations: u64) -> Option<String> {
    if max_operations == 0 {
        Some("max_operations must be at least 1 (it bounds every script run)".into())
    } else if max_operations > MAX_OPERATIONS_CEILING {
        Some(format!(
            "max_operations {max_operations} is above the ceiling of {MAX_OPERATIONS_CEILING} (about 2.5 s of work); a script needing more belongs in a dataset"
        ))
    } else {
        None
    }
}

/// Time limit of one script run, whatever its operation budget: a run that
/// stalls (a huge string operation, deep copies) ends here. It counts the
/// CPU time of the thread running the script, not the wall clock, so that a
/// spec's verdict does not depend on how busy the machine is: on a loaded
/// host the wall clock used to stop runs that the operation budget, which
/// does not care, would have named.
pub(crate) const SCRIPT_DEADLINE: Duration = Duration::from_secs(1);

/// The stack a script run gets. Rhai walks a value recursively (its size
/// checks after every change, clones, drops), once per level, and a script
/// can nest a value as deep as its size limits and its time limit let
/// it build: maps to 10,000 levels, arrays as deep as its second allows
/// (about 5,000 levels in a release build on a busy two-core machine, more
/// on a faster one, each level's size check walking all the others). A
/// 2 MiB worker's stack is near its end there; this is far from it. It is
/// mapped when a run starts, and only the pages touched are used.
pub(crate) const SCRIPT_STACK: usize = 64 << 20;

/// Runs `f` (a script run, and whatever takes its values apart) on a stack
/// of [`SCRIPT_STACK`] bytes.
pub(crate) fn on_script_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::grow(SCRIPT_STACK, f)
}

/// Operations between two looks at the clock.
const CLOCK_EVERY: u64 = 1024;

thread_local! {
    /// The operation count of the script run on this thread, and the
    /// thread's CPU time when the run started.
    static RUN: Cell<(u64, Option<Duration>)> = const { Cell::new((0, None)) };
}

/// Set when the process stops (Ctrl-C): every run ends at its next operation.
static CANCELLED: AtomicBool = AtomicBool::new(false);

/// Ends every script run, those under way and those to come.
pub(crate) fn cancel_all() {
    CANCELLED.store(true, Ordering::SeqCst);
}

const CANCELLED_TOKEN: &str = "cancelled";

/// Ends a run that passed [`SCRIPT_DEADLINE`], or any run once [`cancel_all`]
/// was called. Rhai reports a run's operations counted from 1, so a count
/// that did not grow marks a new run.
fn past_deadline(ops: u64) -> Option<Dynamic> {
    // Acquire: whatever the canceller did before is seen after the run ends.
    if CANCELLED.load(Ordering::Acquire) {
        return Some(Dynamic::from(CANCELLED_TOKEN));
    }
    RUN.with(|run| {
        let (last, start) = run.get();
        let start = match start {
            Some(start) if ops > last => start,
            _ => thread_cpu(),
        };
        run.set((ops, Some(start)));
        (ops % CLOCK_EVERY == 0 && thread_cpu().saturating_sub(start) > SCRIPT_DEADLINE)
            .then(|| Dynamic::from(DEADLINE_PASSED))
    })
}

/// The CPU time the calling thread has used. A script run stays on the
/// thread it started on (its stack grows in place), so the difference of
/// two readings is the run's own work.
fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec for the call's duration,
    // and CLOCK_THREAD_CPUTIME_ID is a clock every Linux kernel provides.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(rc, 0, "the thread's CPU clock cannot be read");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

const DEADLINE_PASSED: &str = "deadline passed";

/// Functions that would block a run without counting operations.
fn refuse_blocking(engine: &mut Engine) {
    let refuse = || -> Result<(), Box<EvalAltResult>> {
        Err("`sleep` is not available in spec scripts: they must not block".into())
    };
    engine.register_fn("sleep", move |_: i64| refuse());
    engine.register_fn("sleep", move |_: f64| refuse());
}

/// A new sandboxed engine allowing `max_operations` operations per run (at
/// most [`MAX_OPERATIONS_CEILING`]) and [`SCRIPT_DEADLINE`] of CPU time.
pub(crate) fn sandboxed_engine(max_operations: u64) -> Engine {
    let mut engine = Engine::new_raw();
    for module in [
        LanguageCorePackage::new().as_shared_module(),
        ArithmeticPackage::new().as_shared_module(),
        LogicPackage::new().as_shared_module(),
        BasicStringPackage::new().as_shared_module(),
        MoreStringPackage::new().as_shared_module(),
        BasicArrayPackage::new().as_shared_module(),
        BasicMapPackage::new().as_shared_module(),
        BasicMathPackage::new().as_shared_module(),
        BasicIteratorPackage::new().as_shared_module(),
        BasicFnPackage::new().as_shared_module(),
    ] {
        engine.register_global_module(module);
    }
    refuse_blocking(&mut engine);
    engine.on_progress(past_deadline);
    engine
        .set_max_operations(max_operations.min(MAX_OPERATIONS_CEILING))
        .set_max_call_levels(48)
        .set_max_expr_depths(128, 64)
        .set_max_string_size(1 << 20)
        .set_max_array_size(100_000)
        .set_max_map_size(10_000)
        .set_max_variables(10_000)
        .set_strict_variables(true)
        .set_fail_on_invalid_map_property(true);
    ScriptRng::register(&mut engine);
    engine
}

/// `source` compiled by `engine` for a scope that will hold `names`: the
/// names alone are declared, as constants in a compile-time scope would be
/// folded into the AST.
pub(crate) fn compile(engine: &Engine, names: &[&str], source: &str) -> Result<AST, ScriptError> {
    let mut scope = Scope::new();
    for name in names {
        scope.push_dynamic(*name, Dynamic::UNIT);
    }
    Ok(engine.compile_with_scope(&scope, source)?)
}

/// A script error with its position inside the script (1-based; 0 when unknown).
#[derive(Debug, Clone)]
pub(crate) struct ScriptError {
    /// What went wrong.
    pub message: String,
    /// Line inside the script.
    pub line: usize,
    /// Column inside the script.
    pub column: usize,
}

impl ScriptError {
    fn at(message: String, pos: Position) -> ScriptError {
        ScriptError {
            message,
            line: pos.line().unwrap_or(0),
            column: pos.position().unwrap_or(0),
        }
    }
}

impl From<ParseError> for ScriptError {
    fn from(e: ParseError) -> Self {
        ScriptError::at(e.0.to_string(), e.1)
    }
}

/// The start of the message of a run stopped by its operation budget.
const OUT_OF_BUDGET: &str = "the script ran out of its operation budget";
/// The start of the message of a run stopped by [`SCRIPT_DEADLINE`].
const PAST_DEADLINE: &str = "the script ran past its time limit";

impl ScriptError {
    /// Whether the run was stopped by a limit (operations or time): the
    /// script stalls or loops, whatever its input.
    pub(crate) fn stalled(message: &str) -> bool {
        [OUT_OF_BUDGET, PAST_DEADLINE]
            .iter()
            .any(|m| message.contains(m))
    }
}

/// Replaces an array or map an error carries (a thrown value, a missing
/// index) by its JSON text, or by its depth when it nests deep: Rhai's
/// `Display` and `Drop` of a deep value recurse past any stack.
fn tame(e: &mut EvalAltResult) {
    let mut e = e;
    loop {
        match e {
            EvalAltResult::ErrorInFunctionCall(_, _, inner, _)
            | EvalAltResult::ErrorInModule(_, inner, _) => e = inner,
            EvalAltResult::ErrorRuntime(v, _)
            | EvalAltResult::ErrorIndexNotFound(v, _)
            | EvalAltResult::ErrorTerminated(v, _) => {
                if v.is_array() || v.is_map() {
                    let text = match value::to_json(std::mem::take(v), THROWN_DEPTH) {
                        Ok(json) => json.to_string(),
                        Err(value::ToJsonError::TooDeep { depth }) => {
                            format!("a value nested {depth} levels deep")
                        }
                        Err(value::ToJsonError::Unrepresentable(why)) => why,
                    };
                    *v = Dynamic::from(text);
                }
                return;
            }
            _ => return,
        }
    }
}

/// The deepest thrown value an error shows as JSON.
const THROWN_DEPTH: usize = 64;

impl From<Box<EvalAltResult>> for ScriptError {
    fn from(mut e: Box<EvalAltResult>) -> Self {
        tame(&mut e);
        let pos = e.position();
        let message = match *e {
            EvalAltResult::ErrorTooManyOperations(_) => format!(
                "{OUT_OF_BUDGET} (an endless loop?); raise `max_operations` if the work is real"
            ),
            EvalAltResult::ErrorTerminated(ref token, _)
                if token.clone().into_string().as_deref() == Ok(CANCELLED_TOKEN) =>
            {
                "the script was cancelled: the run is stopping".into()
            }
            EvalAltResult::ErrorTerminated(..) => format!(
                "{PAST_DEADLINE} of {} s of CPU time (a stalled or very slow script)",
                SCRIPT_DEADLINE.as_secs()
            ),
            EvalAltResult::ErrorStackOverflow(_) => {
                "call depth limit exceeded (endless recursion?)".into()
            }
            EvalAltResult::ErrorRuntime(ref value, _) => runtime_text(value),
            other => strip_position(&other.to_string()),
        };
        // A deadline stops the run wherever it happens to be: no position is
        // more to blame than another, so the error points at the whole script.
        let pos = if message.starts_with(PAST_DEADLINE) {
            Position::NONE
        } else {
            pos
        };
        ScriptError::at(message, pos)
    }
}

fn runtime_text(value: &Dynamic) -> String {
    value
        .clone()
        .into_string()
        .unwrap_or_else(|_| value.to_string())
}

fn strip_position(message: &str) -> String {
    match message.rfind(" (line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    // Times are the test thread's CPU time, as the limit counts them: a
    // busy machine stretches the wall clock, not the work.
    #[test]
    fn endless_loops_stop_quickly_with_a_clear_error() {
        let engine = sandboxed_engine(DEFAULT_MAX_OPERATIONS);
        let started = thread_cpu();
        let err: ScriptError = engine
            .eval::<i64>("let x = 0; loop { x += 1; }")
            .unwrap_err()
            .into();
        assert!(thread_cpu() - started < SCRIPT_DEADLINE);
        assert!(err.message.contains("operation budget"), "{}", err.message);
    }

    #[test]
    fn blocking_and_long_runs_end_within_the_deadline() {
        let engine = sandboxed_engine(MAX_OPERATIONS_CEILING * 100);
        let started = std::time::Instant::now();
        let err: ScriptError = engine.eval::<()>("sleep(30)").unwrap_err().into();
        assert!(
            err.message.contains("`sleep` is not available"),
            "{}",
            err.message
        );
        assert!(started.elapsed() < Duration::from_secs(1));
        let started = thread_cpu();
        let err: ScriptError = engine
            .eval::<i64>("let x = 0; while true { x += 1; }")
            .unwrap_err()
            .into();
        let took = thread_cpu() - started;
        assert!(
            err.message.contains("time limit") || err.message.contains("operation budget"),
            "{}",
            err.message
        );
        assert!(
            took < SCRIPT_DEADLINE + Duration::from_millis(500),
            "{took:?}"
        );
        // The next run gets a fresh clock.
        assert_eq!(engine.eval::<i64>("1 + 1").unwrap(), 2);
    }

    #[test]
    fn no_clock_no_modules_no_undeclared_variables() {
        let engine = sandboxed_engine(DEFAULT_MAX_OPERATIONS);
        assert!(engine.eval::<i64>("timestamp()").is_err());
        assert!(engine.compile(r#"import "x" as y;"#).is_err());
        let err: ScriptError = engine.compile("let a = b + 1;").unwrap_err().into();
        assert_eq!((err.line, err.column), (1, 9));
    }
}
