# ruff: noqa: RUF001 - the items are Russian and show the multiplication sign
"""Writes the development items of the lm-eval parity rig: Russian arithmetic
multiple choice, answers computed here and checked before writing.

Each line: {"id", "question", "choices", "answer"}; `question` is the whole
context as the harness renders it, `answer` the index of the right choice.
Half the items take digits, half Russian number words, so the choices differ
in length and script and acc_norm (log-likelihood per character) is put to
work beside acc.

Usage: python3 make_items.py [OUT.jsonl] [--count N] [--seed S]
"""

import argparse
import json
import random
import sys

UNITS = [
    "ноль",
    "один",
    "два",
    "три",
    "четыре",
    "пять",
    "шесть",
    "семь",
    "восемь",
    "девять",
    "десять",
    "одиннадцать",
    "двенадцать",
    "тринадцать",
    "четырнадцать",
    "пятнадцать",
    "шестнадцать",
    "семнадцать",
    "восемнадцать",
    "девятнадцать",
]
TENS = ["", "", "двадцать", "тридцать", "сорок", "пятьдесят", "шестьдесят", "семьдесят", "восемьдесят", "девяносто"]

OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "×": lambda a, b: a * b}


def words(n):
    """Russian cardinal for 0 <= n <= 99."""
    if not 0 <= n <= 99:
        raise ValueError(f"no words for {n}")
    if n < 20:
        return UNITS[n]
    tens, units = divmod(n, 10)
    return TENS[tens] if units == 0 else f"{TENS[tens]} {UNITS[units]}"


def operands(rng, op):
    if op == "×":
        return rng.randint(2, 9), rng.randint(2, 11)
    if op == "-":
        a = rng.randint(5, 99)
        return a, rng.randint(1, a)
    a = rng.randint(1, 60)
    return a, rng.randint(1, 99 - a)


def distractors(rng, right):
    """Three distinct wrong values in 0..99 near the right one."""
    pool = {right + d for d in (-11, -10, -2, -1, 1, 2, 10, 11)}
    pool |= {int(str(right)[::-1])} if right >= 10 else set()
    pool = sorted(v for v in pool if 0 <= v <= 99 and v != right)
    return rng.sample(pool, 3)


def item(rng, index, in_words):
    op = rng.choice(sorted(OPS))
    a, b = operands(rng, op)
    right = OPS[op](a, b)
    values = [right, *distractors(rng, right)]
    rng.shuffle(values)
    show = words if in_words else str
    suffix = " Ответьте словами." if in_words else ""
    question = f"Вопрос: Сколько будет {a} {op} {b}?{suffix}\nОтвет:"
    choices = [show(v) for v in values]
    answer = values.index(right)
    if len(set(choices)) != len(choices) or OPS[op](a, b) != values[answer]:
        raise AssertionError(f"bad item {index}: {question!r} {choices} {answer}")
    return {"id": f"arith-{index:04d}", "question": question, "choices": choices, "answer": answer}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="-")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=39)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    items = [item(rng, i, in_words=i % 2 == 1) for i in range(args.count)]
    text = "".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
