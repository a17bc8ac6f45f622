//! The arithmetic of t06's prompts, so the fake can answer them right (or wrong).

/// The text after t06's "Вычисли значение выражения:" up to the end of the line.
pub fn expression(prompt: &str) -> Option<String> {
    let (_, rest) = prompt.split_once("Вычисли значение выражения:")?;
    Some(rest.lines().next().unwrap_or_default().trim().to_owned())
}

/// Evaluates integers with + - * and parentheses, usual precedence.
pub fn eval(expr: &str) -> Option<i64> {
    let tokens: Vec<char> = expr.chars().filter(|c| !c.is_whitespace()).collect();
    let mut pos = 0;
    let v = sum(&tokens, &mut pos)?;
    (pos == tokens.len()).then_some(v)
}

fn sum(t: &[char], pos: &mut usize) -> Option<i64> {
    let mut v = product(t, pos)?;
    while let Some(&op @ ('+' | '-' | '−')) = t.get(*pos) {
        *pos += 1;
        let r = product(t, pos)?;
        v = if op == '+' { v + r } else { v - r };
    }
    Some(v)
}

fn product(t: &[char], pos: &mut usize) -> Option<i64> {
    let mut v = atom(t, pos)?;
    while let Some('*' | '×') = t.get(*pos) {
        *pos += 1;
        v *= atom(t, pos)?;
    }
    Some(v)
}

fn atom(t: &[char], pos: &mut usize) -> Option<i64> {
    match t.get(*pos)? {
        '(' => {
            *pos += 1;
            let v = sum(t, pos)?;
            (t.get(*pos) == Some(&')')).then(|| *pos += 1)?;
            Some(v)
        }
        '-' | '−' => {
            *pos += 1;
            Some(-atom(t, pos)?)
        }
        c if c.is_ascii_digit() => {
            let start = *pos;
            while t.get(*pos).is_some_and(char::is_ascii_digit) {
                *pos += 1;
            }
            t[start..*pos].iter().collect::<String>().parse().ok()
        }
        _ => None,
    }
}
