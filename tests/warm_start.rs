//! Warm starts (`src/sandbox/zygote.rs`): the code rule's programs are forks
//! of a warm interpreter, and each fork is confined as a fresh one would be.

use serde_json::{Map, json};

use crate::common::root;

/// Asserts, from inside the model's program, that it was forked warm and
/// that the fork holds nothing but its own run.
const PROBE: &str = "```python
import os, sys
def add(a, b):
    main = sys.modules['__main__']
    # Forked from the zygote: the server was imported, not run as a script.
    assert main.__spec__ is not None and main.__spec__.name == 'serve', main
    assert main.__file__ == os.path.join(os.getcwd(), 'serve.py'), main.__file__
    assert os.getpid() == 2, os.getpid()
    status = dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines())
    assert status['NoNewPrivs'] == '1', status['NoNewPrivs']
    assert status['Seccomp'] == '2', status['Seccomp']
    assert len(open('/proc/self/uid_map').read().splitlines()) == 1
    # Standard streams and the channel to the checker, nothing else.
    fds = os.listdir('/proc/self/fd')
    assert len(fds) <= 6, fds
    allowed = {'PATH', 'LANG', 'HOME', 'TMPDIR', 'PYTHONHASHSEED',
               'PYTHONDONTWRITEBYTECODE', 'PYTHONUTF8'}
    assert set(os.environ) <= allowed, sorted(os.environ)
    # The zygote's own directory is out of reach (Landlock).
    try:
        open(main.__spec__.origin).read()
    except PermissionError:
        pass
    else:
        raise AssertionError('read the zygote directory')
    return a + b
```";

#[test]
fn a_warm_fork_is_confined_like_a_fresh_run() {
    let path = root().join("tests/fixtures/code/hostile_examples.toml");
    let spec = harness::Spec::load(&path).unwrap();
    let mut vars = Map::new();
    vars.insert("tests".into(), json!(["assert add(1, 2) == 3"]));
    for _ in 0..3 {
        let verdict = spec.verify(PROBE, &vars);
        assert!(verdict.passed, "{}", verdict.failure_details());
    }
}

/// The checker runs as its namespace's PID 1, with no init of its own, yet
/// confined as the program is. The tests run in the checker, so they probe it.
const CHECKER_PROBES: &[&str] = &[
    "assert __import__('os').getpid() == 1, __import__('os').getpid()",
    "assert open('/proc/self/status').read().count('NoNewPrivs:\\t1') == 1",
    "assert open('/proc/self/status').read().count('Seccomp:\\t2') == 1",
    "assert sorted(p for p in __import__('os').listdir('/proc') if p.isdigit()) == ['1']",
    "assert add(1, 2) == 3",
];

#[test]
fn the_checker_is_its_own_init_and_confined() {
    let path = root().join("tests/fixtures/code/hostile_examples.toml");
    let spec = harness::Spec::load(&path).unwrap();
    let mut vars = Map::new();
    vars.insert("tests".into(), json!(CHECKER_PROBES));
    for _ in 0..3 {
        let verdict = spec.verify("def add(a, b):\n    return a + b\n", &vars);
        assert!(verdict.passed, "{}", verdict.failure_details());
    }
}
