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
use rhai::{Dynamic, Engine, EvalAltResult, ParseError, Position};

pub mod rng;

use rng::ScriptRng;

/// Default operation budget per script run: about 50 ms of work in a release build.
pub const DEFAULT_MAX_OPERATIONS: u64 = 1_000_000;

/// A new sandboxed engine allowing `max_operations` operations per run.
pub fn sandboxed_engine(max_operations: u64) -> Engine {
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
    engine
        .set_max_operations(max_operations)
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

/// A script error with its position inside the script (1-based; 0 when unknown).
#[derive(Debug, Clone)]
pub struct ScriptError {
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

impl From<Box<EvalAltResult>> for ScriptError {
    fn from(e: Box<EvalAltResult>) -> Self {
        let pos = e.position();
        let message = match *e {
            EvalAltResult::ErrorTooManyOperations(_) => {
                "the script ran out of its operation budget (an endless loop?); \
                 raise `max_operations` if the work is real"
                    .to_owned()
            }
            EvalAltResult::ErrorStackOverflow(_) => {
                "call depth limit exceeded (endless recursion?)".into()
            }
            EvalAltResult::ErrorRuntime(ref value, _) => runtime_text(value),
            other => strip_position(&other.to_string()),
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
    use std::time::{Duration, Instant};

    #[test]
    fn endless_loops_stop_quickly_with_a_clear_error() {
        let engine = sandboxed_engine(DEFAULT_MAX_OPERATIONS);
        let started = Instant::now();
        let err: ScriptError = engine
            .eval::<i64>("let x = 0; loop { x += 1; }")
            .unwrap_err()
            .into();
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(err.message.contains("operation budget"), "{}", err.message);
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
