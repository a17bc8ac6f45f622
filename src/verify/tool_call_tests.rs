use serde_json::json;

use super::*;
use crate::prompt::Message;
use crate::verify::shared::call;

fn tool(name: &str, properties: Value, required: &[&str]) -> Tool {
    Tool {
        name: name.into(),
        description: String::new(),
        parameters: json!({"type": "dict", "properties": properties, "required": required}),
    }
}

/// The verdict on one call of `f` with argument `a = value`, where the
/// schema gives `a` as `properties` say and `acceptable` lists its values.
fn check_argument(properties: Value, acceptable: &Value, value: &Value) -> Verdict {
    let tools = [tool("f", properties, &["a"])];
    let gt = json!([{"f": {"a": acceptable}}]);
    let (_, v) = check(
        &rule(false, 0.0, true),
        vec![call("f", json!({"a": value}))],
        gt,
        &tools,
    );
    v
}

fn rule(exact_order: bool, tolerance: f64, normalize: bool) -> ToolCallRule {
    ToolCallRule {
        expected: Expected::Var("ground_truth".into()),
        exact_order,
        comparison: Comparison {
            tolerance,
            normalize,
            partial: false,
        },
        turn: 0,
    }
}

fn check(
    rule: &ToolCallRule,
    calls: Vec<ToolCall>,
    expected: Value,
    tools: &[Tool],
) -> (String, Verdict) {
    let trajectory = vec![Message::assistant("", calls)];
    let reply = Reply {
        text: "",
        reasoning: "",
        trajectory: &trajectory,
        state: None,
        tools,
        replay: None,
    };
    let mut vars = Map::new();
    vars.insert("ground_truth".into(), expected);
    ReadsReply::verify(rule, &reply, &vars)
}

fn factorial() -> Tool {
    tool(
        "math.factorial",
        json!({"number": {"type": "integer"}}),
        &["number"],
    )
}

/// Each failure names the call, its tool, the argument and the kind.
#[test]
fn failures_name_the_call_the_argument_and_the_kind() {
    let f = || vec![factorial()];
    let gt = json!([{"math.factorial": {"number": [5]}}]);
    let cases: Vec<(Vec<ToolCall>, FailureKind, &str)> = vec![
        (
            vec![call("math.factorial", json!({"number": 6}))],
            FailureKind::WrongArgument,
            "call 1 `math.factorial`: argument `number`: 6 is not one of [5]",
        ),
        (
            vec![call("math.factorial", json!({"number": "5"}))],
            FailureKind::WrongArgumentType,
            "call 1 `math.factorial`: argument `number`: \"5\" is a string, expected an integer",
        ),
        (
            vec![call("math.factorial", json!({}))],
            FailureKind::MissingArgument,
            "call 1 `math.factorial`: argument `number`: required, but missing",
        ),
        (
            vec![call("math.factorial", json!({"number": 5, "x": 1}))],
            FailureKind::UnexpectedArgument,
            "call 1 `math.factorial`: argument `x`: not expected",
        ),
        (
            vec![call("math_factorial", json!({"number": 5}))],
            FailureKind::WrongTool,
            "call 1 `math_factorial`: expected a call of `math.factorial`",
        ),
        (
            vec![ToolCall::from_text("", "math.factorial", "{number: 5")],
            FailureKind::InvalidToolArguments,
            "call 1 `math.factorial`: the arguments are not valid JSON",
        ),
        (
            vec![],
            FailureKind::MissingCall,
            "missing calls: 0 calls made (none), 1 expected (`math.factorial`)",
        ),
        (
            vec![
                call("math.factorial", json!({"number": 5})),
                call("math.factorial", json!({"number": 5})),
            ],
            FailureKind::UnexpectedCall,
            "unexpected calls: 2 calls made",
        ),
    ];
    for (calls, kind, detail) in cases {
        let (_, v) = check(&rule(false, 0.0, true), calls.clone(), gt.clone(), &f());
        assert!(!v.passed, "{calls:?}");
        assert_eq!(v.failure, Some(kind), "{calls:?}: {}", v.detail);
        assert!(v.detail.starts_with(detail), "{calls:?}: {}", v.detail);
    }
    let (shown, v) = check(
        &rule(false, 0.0, true),
        vec![call("math.factorial", json!({"number": 5}))],
        gt,
        &f(),
    );
    assert!(v.passed, "{}", v.detail);
    assert_eq!(shown, r#"math.factorial({"number":5})"#);
}

/// BFCL's rules, one case each: (schema type, acceptable values, argument, passes).
#[test]
fn types_values_and_strings_follow_bfcl() {
    let cases = [
        ("integer", json!([5]), json!(5.0), false),
        ("integer", json!([1]), json!(true), false),
        ("boolean", json!([true]), json!(1), false),
        ("float", json!([5.0]), json!(5), true),
        ("float", json!([0.3]), json!(0.30000000000000004), false),
        ("integer", json!(["x"]), json!("x"), true),
        ("integer", json!(["x"]), json!("X"), false),
        ("float", json!(["", null]), json!(null), true),
        ("float", json!([1.5]), json!(null), false),
        (
            "string",
            json!(["New York, NY"]),
            json!("new york ny"),
            true,
        ),
        ("string", json!(["it's"]), json!("IT\"S"), true),
        ("string", json!(["a:b"]), json!("ab"), false),
        ("string", json!(["Straße"]), json!("STRASSE"), false),
        ("any", json!(["5"]), json!(5), false),
    ];
    for (ty, acceptable, value, passes) in cases {
        let v = check_argument(json!({"a": {"type": ty}}), &acceptable, &value);
        assert_eq!(
            v.passed, passes,
            "{ty} {acceptable} <- {value}: {}",
            v.detail
        );
    }
}

#[test]
fn lists_and_dicts_follow_bfcl() {
    let floats = json!({"a": {"type": "array", "items": {"type": "float"}}});
    let dict = json!({"a": {"type": "dict", "properties": {}}});
    let cases = [
        (floats.clone(), json!([[1.0, 2.0]]), json!([1, 2]), false),
        (floats.clone(), json!([[1.0, 2.0], ""]), json!([1, 2]), true),
        (floats, json!([[2.0, 1.0]]), json!([1.0, 2.0]), false),
        (
            json!({"a": {"type": "array", "items": {"type": "string"}}}),
            json!([["New York"]]),
            json!(["new-york"]),
            true,
        ),
        (
            dict.clone(),
            json!([{"k": ["v"]}]),
            json!({"k": "v", "x": "y"}),
            false,
        ),
        (
            dict.clone(),
            json!([{"k": ["v"], "o": ["", "w"]}]),
            json!({"k": "V"}),
            true,
        ),
        (dict, json!([{"k": ["v"]}]), json!({}), false),
    ];
    for (properties, acceptable, value, passes) in cases {
        let v = check_argument(properties, &acceptable, &value);
        assert_eq!(v.passed, passes, "{acceptable} <- {value}: {}", v.detail);
    }
}

/// Optional means `""` among the acceptable values, not the schema's `required`.
#[test]
fn optional_arguments_follow_the_acceptable_values() {
    let tools = [tool(
        "f",
        json!({"a": {"type": "integer"}, "b": {"type": "integer"}}),
        &["a"],
    )];
    let cases = [
        (
            json!({"a": [1], "b": [2]}),
            json!({"a": 1}),
            Some(FailureKind::MissingArgument),
        ),
        (json!({"a": [1], "b": ["", 2]}), json!({"a": 1}), None),
        (
            json!({"a": [1]}),
            json!({"a": 1, "b": 2}),
            Some(FailureKind::UnexpectedArgument),
        ),
        (
            json!({"a": ["", 1]}),
            json!({}),
            Some(FailureKind::MissingArgument),
        ),
    ];
    for (expected, arguments, failure) in cases {
        let gt = json!([{"f": expected}]);
        let (_, v) = check(
            &rule(false, 0.0, true),
            vec![call("f", arguments.clone())],
            gt,
            &tools,
        );
        assert_eq!(v.failure, failure, "{arguments}: {}", v.detail);
    }
}

/// Any order matches greedily, without backtracking, as BFCL does; exact
/// order checks the n-th call against the n-th.
#[test]
fn order_any_is_greedy_and_exact_is_positional() {
    let tools = [tool("a", json!({"x": {"type": "integer"}}), &["x"])];
    let gt = json!([{"a": {"x": [1, 2]}}, {"a": {"x": [1]}}]);
    let calls = |x: i64, y: i64| vec![call("a", json!({"x": x})), call("a", json!({"x": y}))];
    let cases = [
        (false, calls(1, 2), false),
        (false, calls(2, 1), true),
        (true, calls(2, 1), true),
        (true, calls(1, 2), false),
    ];
    for (exact, calls, passes) in cases {
        let (_, v) = check(&rule(exact, 0.0, true), calls.clone(), gt.clone(), &tools);
        assert_eq!(v.passed, passes, "exact {exact} {calls:?}: {}", v.detail);
    }
    let (_, v) = check(&rule(false, 0.0, true), calls(1, 2), gt, &tools);
    assert!(
        v.detail.starts_with(
            "expected call 2 `a` matches no call (call 2 `a`: argument `x`: 2 is not one of [1])"
        ),
        "{}",
        v.detail
    );
}

#[test]
fn tolerance_and_normalization_are_switches() {
    let tools = [tool(
        "f",
        json!({"n": {"type": "float"}, "s": {"type": "string"}}),
        &[],
    )];
    let gt = json!([{"f": {"n": [0.3], "s": ["New York"]}}]);
    let near = vec![call(
        "f",
        json!({"n": 0.30000000000000004, "s": "New York"}),
    )];
    assert!(
        !check(&rule(false, 0.0, true), near.clone(), gt.clone(), &tools)
            .1
            .passed
    );
    assert!(
        check(&rule(false, 1e-9, true), near, gt.clone(), &tools)
            .1
            .passed
    );
    let lower = vec![call("f", json!({"n": 0.3, "s": "new york"}))];
    assert!(
        check(&rule(false, 0.0, true), lower.clone(), gt.clone(), &tools)
            .1
            .passed
    );
    assert!(!check(&rule(false, 0.0, false), lower, gt, &tools).1.passed);
}

/// Without the tool's schema, types come from the acceptable values.
#[test]
fn without_a_schema_the_acceptable_values_type_the_arguments() {
    let gt = json!([{"f": {"city": ["Paris"], "days": [3]}}]);
    let cases = [
        (json!({"city": "paris", "days": 3}), true),
        (json!({"city": "Paris", "days": "3"}), false),
    ];
    for (arguments, passes) in cases {
        let (_, v) = check(
            &rule(false, 0.0, true),
            vec![call("f", arguments.clone())],
            gt.clone(),
            &[],
        );
        assert_eq!(v.passed, passes, "{arguments}: {}", v.detail);
    }
}

#[test]
fn the_turn_picks_the_assistant_message() {
    let trajectory = vec![
        Message::assistant("", vec![call("a", json!({}))]),
        Message::tool_result(&call("a", json!({})), "ok"),
        Message::assistant("", vec![call("b", json!({}))]),
    ];
    let mut r = rule(false, 0.0, true);
    r.turn = 1;
    let reply = Reply {
        text: "",
        reasoning: "",
        trajectory: &trajectory,
        state: None,
        tools: &[],
        replay: None,
    };
    let mut vars = Map::new();
    vars.insert("ground_truth".into(), json!([{"b": {}}]));
    assert!(ReadsReply::verify(&r, &reply, &vars).1.passed);
    r.turn = 0;
    assert!(!ReadsReply::verify(&r, &reply, &vars).1.passed);
}

#[test]
fn malformed_expected_calls_are_named() {
    let problems = [
        (json!({"f": {}}), "is an object, not a list of calls"),
        (
            json!([{"f": {}, "g": {}}]),
            "call 1: is not an object with one key",
        ),
        (
            json!([{"f": {"a": 1}}]),
            "call 1 `f`: argument `a`: give a list of acceptable values",
        ),
    ];
    for (value, why) in problems {
        let mut vars = Map::new();
        vars.insert("ground_truth".into(), value.clone());
        let p = rule(false, 0.0, true).value_problems(&vars);
        assert!(p[0].1.contains(why), "{value}: {p:?}");
    }
}

#[test]
fn extract_is_an_error_on_rules_over_calls() {
    let text = "[[verify]]\nrule = \"tool_call\"\nvalue = []\nextract = \"last_line\"\n";
    let path = std::path::Path::new("s.toml");
    let map = crate::format::locate::SourceMap::parse(path, text).unwrap();
    let table: toml::Table = toml::from_str(text).unwrap();
    let verify: Vec<crate::format::RuleTable> = table["verify"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| crate::format::RuleTable(t.as_table().unwrap().clone()))
        .collect();
    let errors = match super::super::RuleSet::build(&verify, &map, std::path::Path::new("."), None)
    {
        Ok(_) => panic!("extract on tool_call was accepted"),
        Err(errors) => errors,
    };
    let shown = errors[0].to_string();
    assert!(
        shown.contains("reads tool calls or the episode, not text: `extract` does not apply"),
        "{shown}"
    );
    assert!(shown.contains("s.toml:4:"), "{shown}");
}

#[test]
fn a_wrong_type_is_named_as_the_schema_names_it() {
    for (declared, named) in [
        ("number", "a number"),
        ("float", "a float"),
        ("integer", "an integer"),
    ] {
        let detail = format!("\"5\" is a string, expected {named}");
        let tools = [tool("f", json!({"x": {"type": declared}}), &["x"])];
        let (_, v) = check(
            &rule(false, 0.0, true),
            vec![call("f", json!({"x": "5"}))],
            json!([{"f": {"x": [5]}}]),
            &tools,
        );
        assert!(v.detail.ends_with(&detail), "{declared}: {}", v.detail);
    }
}
