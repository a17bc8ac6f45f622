//! Script values to JSON and away, without recursion.
//!
//! A script can nest a value as deep as Rhai's size limits let it (10,000
//! map entries, 100,000 array items: that deep, one per level), far past
//! what a thread's stack survives in a recursive walk. `rhai::serde` and
//! Rhai's own `Drop` recurse, so what a script hands back is converted
//! here by a loop that stops at the caller's depth limit, and whatever is
//! left over (a value too deep, a scope's variables) is taken apart by a
//! loop before it is dropped.

use rhai::{Dynamic, Scope};
use serde_json::{Map, Value};

/// Why a script's value has no JSON form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToJsonError {
    /// It nests deeper than the limit: `depth` levels (as JSON counts them).
    TooDeep {
        /// How deep it went.
        depth: usize,
    },
    /// It holds something JSON cannot (a function pointer, the RNG).
    Unrepresentable(String),
}

/// An array or map being converted: what is done of it, and the rest.
enum Frame {
    Array(Vec<Value>, std::vec::IntoIter<Dynamic>),
    Map(
        Map<String, Value>,
        Option<String>,
        <rhai::Map as IntoIterator>::IntoIter,
    ),
}

/// A value opened: a leaf converted, or a container to walk.
enum Opened {
    Leaf(Value),
    Frame(Frame),
    /// A container that would nest past the limit, kept to take apart.
    Deep(Dynamic),
}

/// `value` as JSON, nested at most `max_depth` levels (an array or map of
/// plain values is 1); a deeper value is taken apart without recursion and
/// its whole depth reported.
pub(crate) fn to_json(value: Dynamic, max_depth: usize) -> Result<Value, ToJsonError> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut pending = Some(value);
    let mut finished: Option<Value> = None;
    loop {
        if let Some(value) = pending.take() {
            match open(value, stack.len() < max_depth)? {
                Opened::Leaf(leaf) => finished = Some(leaf),
                Opened::Frame(frame) => stack.push(frame),
                Opened::Deep(value) => {
                    let depth = stack.len();
                    let rest = stack.into_iter().enumerate().flat_map(|(i, frame)| {
                        let children: Box<dyn Iterator<Item = Dynamic>> = match frame {
                            Frame::Array(_, rest) => Box::new(rest),
                            Frame::Map(_, _, rest) => Box::new(rest.map(|(_, v)| v)),
                        };
                        children.map(move |child| (child, i + 1))
                    });
                    let deepest = take_apart(std::iter::once((value, depth)).chain(rest));
                    return Err(ToJsonError::TooDeep { depth: deepest });
                }
            }
        }
        if let Some(value) = finished.take() {
            match stack.last_mut() {
                None => return Ok(value),
                Some(Frame::Array(done, _)) => done.push(value),
                Some(Frame::Map(done, key, _)) => {
                    done.insert(key.take().unwrap_or_default(), value);
                }
            }
        }
        let closed = match stack.last_mut() {
            None => unreachable!("a finished top value returned above"),
            Some(Frame::Array(_, rest)) => match rest.next() {
                Some(child) => {
                    pending = Some(child);
                    false
                }
                None => true,
            },
            Some(Frame::Map(_, key, rest)) => match rest.next() {
                Some((name, child)) => {
                    *key = Some(name.to_string());
                    pending = Some(child);
                    false
                }
                None => true,
            },
        };
        if closed {
            finished = match stack.pop() {
                Some(Frame::Array(done, _)) => Some(Value::Array(done)),
                Some(Frame::Map(done, ..)) => Some(Value::Object(done)),
                None => None,
            };
        }
    }
}

/// Opens one value; a container only when `room` is left for its level.
fn open(value: Dynamic, room: bool) -> Result<Opened, ToJsonError> {
    let value = value.flatten();
    if value.is_array() || value.is_map() {
        if !room {
            return Ok(Opened::Deep(value));
        }
        if value.is_array() {
            let items = value.into_array().unwrap_or_default();
            let done = Vec::with_capacity(items.len());
            return Ok(Opened::Frame(Frame::Array(done, items.into_iter())));
        }
        let map = value.try_cast::<rhai::Map>().unwrap_or_default();
        return Ok(Opened::Frame(Frame::Map(Map::new(), None, map.into_iter())));
    }
    // A plain value (or a blob: bytes, one level): no recursion to fear.
    rhai::serde::from_dynamic::<Value>(&value)
        .map(Opened::Leaf)
        .map_err(|e| ToJsonError::Unrepresentable(e.to_string()))
}

/// Takes `values` (each with its depth) apart level by level, so dropping
/// them recurses nowhere; the deepest level met.
fn take_apart(values: impl Iterator<Item = (Dynamic, usize)>) -> usize {
    let mut todo: Vec<(Dynamic, usize)> = values.collect();
    let mut deepest = 0;
    while let Some((value, depth)) = todo.pop() {
        let value = value.flatten();
        if value.is_array() {
            deepest = deepest.max(depth + 1);
            let items = value.into_array().unwrap_or_default();
            todo.extend(items.into_iter().map(|v| (v, depth + 1)));
        } else if value.is_map() {
            deepest = deepest.max(depth + 1);
            let map = value.try_cast::<rhai::Map>().unwrap_or_default();
            todo.extend(map.into_values().map(|v| (v, depth + 1)));
        }
    }
    deepest
}

/// Drops `values` however deep they nest.
pub(crate) fn drop_deep(values: impl IntoIterator<Item = Dynamic>) {
    take_apart(values.into_iter().map(|v| (v, 0)));
}

/// Drops a scope after a run: a script's variables may nest deep.
pub(crate) fn drop_scope(scope: Scope<'_>) {
    drop_deep(scope.into_iter().map(|(_, value, _)| value));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripting::{DEFAULT_MAX_OPERATIONS, sandboxed_engine};
    use serde_json::json;

    fn eval(script: &str) -> Dynamic {
        sandboxed_engine(DEFAULT_MAX_OPERATIONS)
            .eval::<Dynamic>(script)
            .unwrap()
    }

    #[test]
    fn values_convert_as_rhai_serde_converts_them() {
        let value = eval(r#"#{ a: [1, 2.5, "x", true, ()], b: #{ c: #{} }, d: [] }"#);
        let want = rhai::serde::from_dynamic::<Value>(&value).unwrap();
        assert_eq!(to_json(value, 3), Ok(want.clone()));
        assert_eq!(
            want,
            json!({"a": [1, 2.5, "x", true, null], "b": {"c": {}}, "d": []})
        );
        assert_eq!(to_json(eval("42"), 0), Ok(json!(42)));
        assert_eq!(
            to_json(eval("[]"), 0),
            Err(ToJsonError::TooDeep { depth: 1 })
        );
        let fault = to_json(eval("[Fn(\"f\")]"), 3);
        assert!(
            matches!(fault, Err(ToJsonError::Unrepresentable(_))),
            "{fault:?}"
        );
    }

    /// Far deeper than a recursive walk or drop survives on this thread's stack.
    #[test]
    fn deep_values_are_refused_and_dropped_without_recursion() {
        let mut value = Dynamic::from(1_i64);
        for i in 0..300_000 {
            value = if i % 2 == 0 {
                Dynamic::from_array(vec![value, Dynamic::from(2_i64)])
            } else {
                let mut map = rhai::Map::new();
                map.insert("prev".into(), value);
                Dynamic::from_map(map)
            };
        }
        assert_eq!(
            to_json(value, 64),
            Err(ToJsonError::TooDeep { depth: 300_000 })
        );
        let mut deep = Dynamic::UNIT;
        for _ in 0..300_000 {
            deep = Dynamic::from_array(vec![deep]);
        }
        drop_deep([deep]);
    }

    /// What a script can build (arrays as deep as its time limit lets
    /// it, maps to 10,000 entries), and Rhai's own recursions over it (size
    /// checks, clones, drops), on a test thread's 2 MiB stack.
    #[test]
    fn a_script_nesting_to_its_limits_ends_without_overflow() {
        let engine = sandboxed_engine(crate::scripting::MAX_OPERATIONS_CEILING);
        for script in [
            "let v = 1; for i in 0..99990 { v = [v]; } v",
            "let v = 1; for i in 0..99990 { v = [v]; } v = 2; v",
            "let m = #{}; for i in 0..9990 { m = #{ prev: m }; } m",
            "let s = #{ log: () }; for i in 0..9990 { s.log = #{ prev: s.log }; } s",
        ] {
            let ended = crate::scripting::on_script_stack(|| {
                let mut scope = Scope::new();
                let result = engine.eval_with_scope::<Dynamic>(&mut scope, script);
                drop_scope(scope);
                match result {
                    Ok(value) => format!("{:?}", to_json(value, 64)),
                    Err(e) => crate::scripting::ScriptError::from(e).message,
                }
            });
            assert!(
                ended.contains("TooDeep")
                    || ended.contains("time limit")
                    || ended == "Ok(Number(2))",
                "{script}: {ended}"
            );
        }
        // Ten times deeper than a release build gets in a second: Rhai's
        // walks over it (read-write marking, clone, size check) need the stack.
        let mut deep = Dynamic::UNIT;
        for _ in 0..60_000 {
            deep = Dynamic::from_array(vec![deep]);
        }
        let len = crate::scripting::on_script_stack(|| {
            let mut scope = Scope::new();
            scope.push_dynamic("v", deep);
            let len = engine.eval_with_scope::<i64>(&mut scope, "let w = [v]; w.len()");
            drop_scope(scope);
            len
        });
        assert_eq!(len.unwrap(), 1);
    }
}
