//! Procedural instances: a Rhai script, compiled once, run per instance with
//! a fresh RNG stream keyed by (spec seed, instance index).

use rhai::{AST, Dynamic, Engine, Scope};
use serde_json::{Map, Value};

use crate::format::depth::{MAX_DEPTH, too_deep_text};
use crate::scripting::rng::ScriptRng;
use crate::scripting::value::{ToJsonError, drop_scope, to_json};
use crate::scripting::{ScriptError, compile, on_script_stack, sandboxed_engine};

/// A compiled generation script.
pub(crate) struct Generator {
    engine: Engine,
    ast: AST,
    data: Dynamic,
    seed: u64,
}

/// The names every generation script may read; `row` is unit unless the spec has a `[dataset]`.
const SCOPE_NAMES: [&str; 5] = ["data", "index", "seed", "rng", "row"];

impl Generator {
    /// Compiles `script`; `data` is the spec's `[data]` table, visible as `data`.
    pub(crate) fn new(
        script: &str,
        data: &Map<String, Value>,
        seed: u64,
        max_operations: u64,
    ) -> Result<Generator, ScriptError> {
        let engine = sandboxed_engine(max_operations);
        let data = rhai::serde::to_dynamic(data)?;
        let ast = compile(&engine, &SCOPE_NAMES, script)?;
        Ok(Generator {
            engine,
            ast,
            data,
            seed,
        })
    }

    /// The variables of instance `index`; `row` is the dataset row's variables, when there is one.
    pub(crate) fn generate(
        &self,
        index: u64,
        row: Option<&Map<String, Value>>,
    ) -> Result<Map<String, Value>, ScriptError> {
        // Rhai walks the values a script builds recursively, however deep.
        on_script_stack(|| self.generate_here(index, row))
    }

    fn generate_here(
        &self,
        index: u64,
        row: Option<&Map<String, Value>>,
    ) -> Result<Map<String, Value>, ScriptError> {
        let mut scope = Scope::new();
        scope.push_constant_dynamic("data", self.data.clone());
        scope.push_constant("index", index as i64);
        scope.push_constant("seed", self.seed as i64);
        scope.push("rng", ScriptRng::for_instance(self.seed, index));
        let row = match row {
            Some(r) => rhai::serde::to_dynamic(r)?,
            None => Dynamic::UNIT,
        };
        scope.push_constant_dynamic("row", row);
        let result = self
            .engine
            .eval_ast_with_scope::<Dynamic>(&mut scope, &self.ast);
        drop_scope(scope);
        let result = result?;
        let type_name = result.type_name();
        let whole = |message: String| ScriptError {
            message,
            line: 0,
            column: 0,
        };
        match to_json(result, MAX_DEPTH) {
            Ok(Value::Object(vars)) => Ok(vars),
            Ok(_) => Err(whole(format!(
                "the script must end with a map of instance variables (#{{ name: value }}), \
                 but it returned {type_name}"
            ))),
            // Past the limit, the instance's records could not be read back.
            Err(ToJsonError::TooDeep { depth }) => Err(whole(too_deep_text(
                "the map of instance variables nests",
                depth,
            ))),
            Err(ToJsonError::Unrepresentable(why)) => Err(whole(why)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripting::DEFAULT_MAX_OPERATIONS;

    fn data() -> Map<String, Value> {
        serde_json::from_str(r#"{"names": ["Анна", "Борис", "Вера"]}"#).unwrap()
    }

    #[test]
    fn instances_are_pure_functions_of_seed_and_index() {
        let script = "let n = rng.pick(data.names); #{ name: n, x: rng.int(1, 1000), i: index }";
        let g = Generator::new(script, &data(), 42, DEFAULT_MAX_OPERATIONS).unwrap();
        let a: Vec<_> = (0..20).map(|i| g.generate(i, None).unwrap()).collect();
        let b: Vec<_> = (0..20)
            .rev()
            .map(|i| g.generate(i, None).unwrap())
            .collect();
        assert_eq!(a, b.into_iter().rev().collect::<Vec<_>>());
        assert_eq!(a[3]["i"], 3);
        let distinct: std::collections::BTreeSet<_> =
            a.iter().map(|v| v["x"].to_string()).collect();
        assert!(distinct.len() > 15);
    }

    #[test]
    fn rng_passed_to_functions_shares_its_stream() {
        let script = "fn draw(r) { r.int(1, 1000000) } let a = draw(rng); let b = draw(rng); #{ a: a, b: b, c: rng.int(1, 1000000) }";
        let g = Generator::new(script, &data(), 3, DEFAULT_MAX_OPERATIONS).unwrap();
        let v = g.generate(0, None).unwrap();
        assert_ne!(v["a"], v["b"]);
        assert_ne!(v["b"], v["c"]);
    }

    #[test]
    fn scripts_post_process_dataset_rows() {
        let g = Generator::new(
            "#{ q: row.q + \"?\", i: index }",
            &data(),
            0,
            DEFAULT_MAX_OPERATIONS,
        )
        .unwrap();
        let row: Map<String, Value> = serde_json::from_str(r#"{"q": "Где офис"}"#).unwrap();
        let v = g.generate(4, Some(&row)).unwrap();
        assert_eq!(
            (v["q"].as_str(), v["i"].as_i64()),
            (Some("Где офис?"), Some(4))
        );
    }

    #[test]
    fn a_non_map_result_is_an_error() {
        let g = Generator::new("42", &data(), 0, DEFAULT_MAX_OPERATIONS).unwrap();
        let err = g.generate(0, None).unwrap_err();
        assert!(
            err.message.contains("map of instance variables"),
            "{}",
            err.message
        );
    }

    #[test]
    fn variables_nested_too_deep_are_refused() {
        let script = "let v = 1; for i in 0..n { v = [v]; } #{ v: v }";
        // Each `[v]` copies `v`: the work grows with the square of `n`, so the
        // deepest case stays far inside the 1 s wall clock on a loaded machine.
        for (n, ok) in [(63, true), (64, false), (200, false)] {
            let g =
                Generator::new(&format!("let n = {n}; {script}"), &data(), 0, 10_000_000).unwrap();
            match g.generate(0, None) {
                Ok(vars) => assert!(ok, "{n}: {vars:?}"),
                Err(e) => {
                    assert!(!ok, "{n}: {}", e.message);
                    let says = format!("nests {} levels deep, deeper than the 64", n + 1);
                    assert!(e.message.contains(&says), "{}", e.message);
                }
            }
        }
    }

    #[test]
    fn runtime_errors_carry_positions() {
        let g = Generator::new("let a = [];\nlet b = rng.pick(a);\n#{}", &data(), 0, 1000).unwrap();
        let err = g.generate(0, None).unwrap_err();
        assert_eq!(err.line, 2, "{err:?}");
        assert!(err.message.contains("empty"), "{}", err.message);
    }
}
