#!/usr/bin/env python3
"""Vendors a BFCL subset into datasets/bfcl/ and writes the reference
verdicts of BFCL's own AST checker for it (datasets/bfcl/reference.jsonl).

Nothing of BFCL's checker is copied here: the verdicts come from the
installed `bfcl-eval` package (`ast_checker` for simple, multiple, parallel
and parallel-multiple; the relevance evaluation of its eval runner for
irrelevance). The harness's `tool_call` and `no_tool_call` rules must give
the same verdict on every line of the reference.

Run it from the repository root, in a virtualenv with the pinned wheel:

    python3 -m venv /tmp/bfcl
    /tmp/bfcl/bin/pip install bfcl-eval==2026.3.23 soundfile
    /tmp/bfcl/bin/python scripts/bfcl_reference.py

(`soundfile` is needed because importing the checker imports every model
handler, and the Qwen one imports qwen-agent, which imports soundfile
without declaring it.) It rewrites
datasets/bfcl/<category>.jsonl (the rows, taken from the wheel's data and
possible_answer files), datasets/bfcl/reference.jsonl and
datasets/bfcl/probes.jsonl (synthetic one-function rows, one per checker
rule the sample rarely reaches, each with one answer and its verdict).
The output is deterministic: rows are the ROWS ids of each category with
the smallest SHA-256, in id order; answers follow from the ground truth
alone, in a fixed order of kinds. Rerunning it gives identical files.
"""
import copy
import hashlib
import json
import pathlib

import bfcl_eval
from bfcl_eval.constants.enums import Language
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker, standardize_string
from bfcl_eval.eval_checker.eval_runner import _evaluate_single_relevance_entry

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "datasets" / "bfcl"
DATA = pathlib.Path(bfcl_eval.__file__).parent / "data"
VERSION_PREFIX = "BFCL_v4"
CATEGORIES = ["simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance"]
ROWS = 50
# The checker consults the model's config only for function names with a
# dot; this model keeps them as they are (underscore_to_dot = False).
MODEL = "gorilla-openfunctions-v2"
# Placeholder values per BFCL type, for calls the ground truth does not give.
PLACEHOLDER = {
    "string": "test",
    "any": "test",
    "integer": 1,
    "float": 1.5,
    "boolean": True,
    "array": [],
    "tuple": [],
    "dict": {},
}
# Marks a parameter whose only acceptable value is "" (leave it out); None
# cannot, since BFCL's possible answers hold null as a value.
OMIT = object()
WRONG_TYPE_ORDER = ["integer", "float", "boolean", "string", "any", "array", "tuple", "dict"]
PYTHON_TYPES = {"string": str, "any": str, "integer": int, "float": float,
                "boolean": bool, "array": list, "tuple": list, "dict": dict}


def load_jsonl(path):
    """The JSON objects of a file with one object a line."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def id_number(row):
    """The numeric tail of a BFCL id, for ordering."""
    return int(row["id"].rsplit("_", 1)[1])


def select_rows(category):
    """The category's subset: ROWS rows with the smallest sha256(id), merged
    with their possible answers, in id order."""
    rows = load_jsonl(DATA / f"{VERSION_PREFIX}_{category}.json")
    answers = {}
    answer_file = DATA / "possible_answer" / f"{VERSION_PREFIX}_{category}.json"
    if answer_file.exists():
        answers = {a["id"]: a["ground_truth"] for a in load_jsonl(answer_file)}
    rows.sort(key=lambda r: hashlib.sha256(r["id"].encode()).hexdigest())
    chosen = sorted(rows[:ROWS], key=id_number)
    out = []
    for row in chosen:
        kept = {"id": row["id"], "question": row["question"], "function": row["function"]}
        if answers:
            kept["ground_truth"] = answers[row["id"]]
        out.append(kept)
    return out


def first_value(acceptable):
    """The first acceptable value that is not BFCL's "may be omitted" marker,
    made concrete (dicts and lists of dicts hold acceptable lists per key);
    OMIT when the parameter is only ever omitted."""
    for value in acceptable:
        if isinstance(value, str) and value == "":
            continue
        return concrete(value)
    return OMIT


def concrete(value):
    """A model-side value from a possible-answer value."""
    if isinstance(value, dict):
        out = {}
        for key, acceptable in value.items():
            picked = first_value(acceptable)
            if picked is not OMIT:
                out[key] = picked
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [concrete(v) for v in value]
    return value


def canonical(ground_truth):
    """The ground truth as a model answer: each call with the first
    acceptable value of every parameter that has one."""
    calls = []
    for call in ground_truth:
        (name, params), = call.items()
        args = {}
        for param, acceptable in params.items():
            picked = first_value(acceptable)
            if picked is not OMIT:
                args[param] = picked
        calls.append({name: args})
    return calls


def describe(functions, name):
    """The function description named `name` in the row's list."""
    return next((f for f in functions if f["name"] == name), None)


def schema_type(functions, name, param):
    """The BFCL type of a parameter, or None when the schema lacks it."""
    desc = describe(functions, name)
    props = desc["parameters"]["properties"] if desc else {}
    return props.get(param, {}).get("type")


def is_literal(functions, gt_call, name, param):
    """Whether the possible answer holds values of the schema's own type (not
    a variable name written as a string, which BFCL type-checks loosely)."""
    expected = PYTHON_TYPES.get(schema_type(functions, name, param))
    values = [v for v in gt_call[name][param] if not (isinstance(v, str) and v == "")]
    if expected is float:
        return all(type(v) in (int, float) for v in values)
    return all(type(v) is expected for v in values)


def wrong_scalar(value, acceptable):
    """A value of the same type as `value` that no acceptable value matches."""
    if isinstance(value, bool):
        return None if (not value) in acceptable else (not value)
    if isinstance(value, int):
        return value + 1000
    if isinstance(value, float):
        return value + 1000.5
    if isinstance(value, str):
        return value + " xyzzy"
    if isinstance(value, list):
        return value + [value[-1]] if value else ["xyzzy"]
    if isinstance(value, dict) and value:
        key = next(iter(value))
        return {**value, key: wrong_scalar(value[key], [])}
    return None


def replaced(answer, index, param, value):
    """`answer` with one argument of call `index` set to `value`."""
    out = copy.deepcopy(answer)
    (name, args), = out[index].items()
    args[param] = value
    return out


def removed(answer, index, param):
    """`answer` without one argument of call `index`."""
    out = copy.deepcopy(answer)
    (name, args), = out[index].items()
    del args[param]
    return out


def mutations(row, category):
    """(kind, answer, detail) for every answer generated from one AST row."""
    functions, gt = row["function"], row["ground_truth"]
    answer = canonical(gt)
    (name, args), = answer[0].items()
    gt_call = gt[0]
    desc = describe(functions, name)
    required = desc["parameters"].get("required", [])
    out = [("ground_truth", answer, "the first acceptable value of each argument")]
    literal = [p for p in args if is_literal(functions, gt_call, name, p)]

    for param in literal:
        acceptable = gt_call[name][param]
        values = [v for v in acceptable if not (isinstance(v, str) and v == "")]
        bad = wrong_scalar(args[param], values)
        if bad is not None and (not isinstance(bad, str) or standardize_string(bad)
                                not in [standardize_string(v) for v in values if isinstance(v, str)]):
            out.append(("wrong_value", replaced(answer, 0, param, bad),
                        f"{name}.{param}: {args[param]!r} -> {bad!r}"))
            break
    missing = [p for p in required if p in args]
    if missing:
        out.append(("missing_required", removed(answer, 0, missing[0]), f"{name}.{missing[0]} left out"))
    needed = [p for p in args if p not in required and "" not in gt_call[name][p]]
    if needed:
        out.append(("missing_optional", removed(answer, 0, needed[0]),
                    f"{name}.{needed[0]} left out (optional in the schema, no \"\" in the possible answer)"))
    out.append(("extra_argument", replaced(answer, 0, "unexpected_argument", "x"),
                f"{name}.unexpected_argument (not in the schema)"))
    out.extend(type_mutations(functions, answer, name, args, literal))
    out.extend(function_mutations(functions, answer, name))
    out.extend(valid_variants(functions, gt_call, answer, name, args, literal))
    out.extend(count_mutations(answer, category))
    return out


def type_mutations(functions, answer, name, args, literal):
    """wrong_type (a value of another type), float_for_int and int_for_float."""
    out = []
    by_type = sorted(literal, key=lambda p: WRONG_TYPE_ORDER.index(schema_type(functions, name, p)))
    if by_type:
        param = by_type[0]
        value, kind = args[param], schema_type(functions, name, param)
        if kind in ("integer", "float"):
            bad = str(value)
        elif kind == "boolean":
            bad = "true" if value else "false"
        elif kind in ("string", "any"):
            bad = 12345
        else:
            bad = json.dumps(value)
        out.append(("wrong_type", replaced(answer, 0, param, bad),
                    f"{name}.{param} ({kind}): {value!r} -> {bad!r}"))
    ints = [p for p in literal if schema_type(functions, name, p) == "integer"]
    if ints:
        param = ints[0]
        out.append(("float_for_int", replaced(answer, 0, param, float(args[param])),
                    f"{name}.{param} (integer): {args[param]!r} -> {float(args[param])!r}"))
    floats = [p for p in literal if schema_type(functions, name, p) == "float"
              and isinstance(args[p], float) and args[p].is_integer()]
    if floats:
        param = floats[0]
        out.append(("int_for_float", replaced(answer, 0, param, int(args[param])),
                    f"{name}.{param} (float): {args[param]!r} -> {int(args[param])!r}"))
    return out


def function_mutations(functions, answer, name):
    """wrong_function: another function of the row's list, else a made-up name."""
    others = [f["name"] for f in functions if f["name"] != name]
    other = others[0] if others else "made_up_function"
    out = copy.deepcopy(answer)
    out[0] = {other: out[0][name]}
    return [("wrong_function", out, f"{name} -> {other} (same arguments)")]


def valid_variants(functions, gt_call, answer, name, args, literal):
    """Answers BFCL should accept: another acceptable value, an optional
    argument left out, a string written differently."""
    out = []
    for param in literal:
        values = [v for v in gt_call[name][param] if not (isinstance(v, str) and v == "")]
        if len(values) > 1:
            alt = concrete(values[1])
            out.append(("alternate_value", replaced(answer, 0, param, alt),
                        f"{name}.{param}: {args[param]!r} -> {alt!r} (also acceptable)"))
            break
    optional = [p for p in args if "" in [v for v in gt_call[name][p] if isinstance(v, str)]]
    if optional:
        out.append(("omit_optional", removed(answer, 0, optional[0]),
                    f"{name}.{optional[0]} left out (\"\" is acceptable)"))
    strings = [p for p in literal if schema_type(functions, name, p) == "string" and args[p]]
    if strings:
        param = strings[0]
        value = args[param]
        variant = value.upper().replace(" ", "-") + "."
        out.append(("string_variant", replaced(answer, 0, param, variant),
                    f"{name}.{param}: {value!r} -> {variant!r}"))
    return out


def count_mutations(answer, category):
    """reordered (parallel calls reversed), wrong_count and no_call."""
    out = []
    if "parallel" in category and len(answer) > 1:
        out.append(("reordered", list(reversed(copy.deepcopy(answer))), "calls in reverse order"))
        out.append(("wrong_count", copy.deepcopy(answer[:-1]), "last call dropped"))
    else:
        out.append(("wrong_count", copy.deepcopy(answer + answer[:1]), "first call repeated"))
    out.append(("no_call", [], "no call at all"))
    return out


def irrelevance_answers(row):
    """(kind, answer, detail) for an irrelevance row: no call, or a call."""
    func = row["function"][0]
    params = func["parameters"]
    args = {p: PLACEHOLDER.get(params["properties"][p]["type"], "test") for p in params.get("required", [])}
    return [
        ("no_call", [], "no call at all"),
        ("a_call", [{func["name"]: args}], f"{func['name']} with placeholder required arguments"),
    ]


def probe_function(props, required):
    """A one-function list `f` for a probe."""
    return [{"name": "f", "description": "A probe of one checker rule.",
             "parameters": {"type": "dict", "properties": props, "required": required}}]


INT, FLOAT, BOOL, STR = ({"type": t, "description": t} for t in ("integer", "float", "boolean", "string"))
FLOATS = {"type": "array", "items": {"type": "float"}, "description": "floats"}
STRS = {"type": "array", "items": {"type": "string"}, "description": "strings"}
DICT = {"type": "dict", "properties": {}, "description": "a dict"}
# Rules of the checker the sampled rows exercise rarely or never: (name,
# category, properties, required, ground truth of f, answer arguments).
PROBES = [
    ("bool_for_int", "simple_python", {"a": INT}, ["a"], {"a": [1]}, [{"a": True}]),
    ("int_for_bool", "simple_python", {"a": BOOL}, ["a"], {"a": [True]}, [{"a": 1}]),
    ("float_for_int_integral", "simple_python", {"a": INT}, ["a"], {"a": [5]}, [{"a": 5.0}]),
    ("int_for_float", "simple_python", {"a": FLOAT}, ["a"], {"a": [5.0]}, [{"a": 5}]),
    ("no_numeric_tolerance", "simple_python", {"a": FLOAT}, ["a"], {"a": [0.3]}, [{"a": 0.1 + 0.2}]),
    ("ints_in_float_array", "simple_python", {"a": FLOATS}, ["a"], {"a": [[1.0, 2.0]]}, [{"a": [1, 2]}]),
    ("ints_in_float_array_optional", "simple_python", {"a": FLOATS}, [], {"a": ["", [1.0, 2.0]]}, [{"a": [1, 2]}]),
    ("variable_string_for_int", "simple_python", {"a": INT}, ["a"], {"a": ["x"]}, [{"a": "x"}]),
    ("variable_not_normalized", "simple_python", {"a": INT}, ["a"], {"a": ["x"]}, [{"a": "X"}]),
    ("null_listed", "simple_python", {"a": FLOAT}, [], {"a": ["", None]}, [{"a": None}]),
    ("null_not_listed", "simple_python", {"a": FLOAT}, [], {"a": ["", 1.0]}, [{"a": None}]),
    ("string_punctuation_space_case", "simple_python", {"a": STR}, ["a"], {"a": ["New York, NY"]},
     [{"a": "new-york ny"}]),
    ("string_quote", "simple_python", {"a": STR}, ["a"], {"a": ["it's"]}, [{"a": 'it"s'}]),
    ("string_colon_kept", "simple_python", {"a": STR}, ["a"], {"a": ["a:b"]}, [{"a": "ab"}]),
    ("string_lower_not_casefold", "simple_python", {"a": STR}, ["a"], {"a": ["Straße"]}, [{"a": "STRASSE"}]),
    ("string_any_type", "simple_python", {"a": {"type": "any", "description": "any"}}, ["a"], {"a": ["5"]},
     [{"a": 5}]),
    ("list_order_matters", "simple_python", {"a": STRS}, ["a"], {"a": [["x", "y"]]}, [{"a": ["y", "x"]}]),
    ("list_items_normalized", "simple_python", {"a": STRS}, ["a"], {"a": [["New York"]]}, [{"a": ["new york"]}]),
    ("optional_in_answer_needed", "simple_python", {"a": INT, "b": INT}, ["a"], {"a": [1], "b": [2]}, [{"a": 1}]),
    ("schema_param_not_in_answer", "simple_python", {"a": INT, "b": INT}, ["a"], {"a": [1]}, [{"a": 1, "b": 2}]),
    ("required_with_empty_marker", "simple_python", {"a": INT}, ["a"], {"a": ["", 1]}, [{}]),
    ("dict_extra_key", "simple_python", {"a": DICT}, ["a"], {"a": [{"k": [1]}]}, [{"a": {"k": 1, "z": 2}}]),
    ("dict_optional_key", "simple_python", {"a": DICT}, ["a"], {"a": [{"k": [1], "o": ["", 2]}]},
     [{"a": {"k": 1}}]),
    ("dict_value_normalized", "simple_python", {"a": DICT}, ["a"], {"a": [{"k": ["New York"]}]},
     [{"a": {"k": "newyork"}}]),
    ("name_case_sensitive", "simple_python", {"a": INT}, ["a"], {"a": [1]}, "F"),
    ("parallel_greedy", "parallel", {"a": INT}, ["a"], [{"a": [1, 2]}, {"a": [1]}], [{"a": 1}, {"a": 2}]),
    ("parallel_greedy_swapped", "parallel", {"a": INT}, ["a"], [{"a": [1, 2]}, {"a": [1]}], [{"a": 2}, {"a": 1}]),
    ("irrelevance_empty_object", "irrelevance", {"a": INT}, ["a"], None, [{}]),
]


def probes():
    """The probe rows with BFCL's verdict on each."""
    out = []
    for name, category, props, required, gt, args in PROBES:
        row = {"id": f"probe_{name}", "question": [[{"role": "user", "content": name}]],
               "function": probe_function(props, required)}
        if gt is not None:
            row["ground_truth"] = [{"f": g} for g in (gt if isinstance(gt, list) else [gt])]
        if args == "F":
            answer = [{"F": {"a": 1}}]
        elif category == "irrelevance":
            answer = args
        else:
            answer = [{"f": a} for a in args]
        valid, error_type, error, sub_errors = verdict(row, category, answer)
        line = {**row, "category": category, "answer": answer, "valid": valid,
                "error_type": error_type, "error": error}
        if sub_errors:
            line["sub_errors"] = sub_errors
        out.append(line)
    return out


class Decoded:
    """A BFCL model handler whose output is already decoded."""

    def decode_ast(self, result, language=None, has_tool_call_tag=False):
        """The answer as it is."""
        return copy.deepcopy(result)


def verdict(row, category, answer):
    """BFCL's verdict on `answer` for `row`: (valid, error_type, error,
    sub_errors)."""
    if category == "irrelevance":
        result = _evaluate_single_relevance_entry(Decoded(), row["id"], answer, row, MODEL, category)
    else:
        result = ast_checker(copy.deepcopy(row["function"]), copy.deepcopy(answer),
                             copy.deepcopy(row["ground_truth"]), Language.PYTHON, category, MODEL)
    if result["valid"]:
        return True, None, None, None
    # A parallel mismatch lists, for each output it tried, the error of that
    # pair with copies of both sides; the copies are the line's answer and
    # the row's ground truth, so only the index and the error are kept.
    messages, sub_errors = [], []
    for item in result["error"]:
        if isinstance(item, dict):
            (label, sub), = item.items()
            sub_errors.append({"index": int(label.rsplit(" ", 1)[1]),
                               "error_type": sub["sub_error_type"], "error": sub["sub_error"]})
        else:
            messages.append(item)
    return False, result["error_type"], messages, sub_errors or None


def main():
    """Writes the rows and the reference."""
    OUT.mkdir(parents=True, exist_ok=True)
    lines = []
    for category in CATEGORIES:
        rows = select_rows(category)
        with open(OUT / f"{category}.jsonl", "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        for row in rows:
            generated = irrelevance_answers(row) if category == "irrelevance" else mutations(row, category)
            for kind, answer, detail in generated:
                valid, error_type, error, sub_errors = verdict(row, category, answer)
                line = {"id": row["id"], "category": category, "kind": kind, "detail": detail,
                        "answer": answer, "valid": valid, "error_type": error_type, "error": error}
                if sub_errors:
                    line["sub_errors"] = sub_errors
                lines.append(line)
    with open(OUT / "reference.jsonl", "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    with open(OUT / "probes.jsonl", "w", encoding="utf-8") as f:
        for line in probes():
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"{len(lines)} answers and {len(PROBES)} probes written")


if __name__ == "__main__":
    main()
