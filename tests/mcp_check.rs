//! `[[mcp]]` servers as a spec names them and `harness check` judges them,
//! through the real CLI: servers named in `harness.toml`, errors at their
//! keys, each server started and its tools judged, and a listing remembered
//! until the server changes.

use crate::common::fake_server::FakeServer;
use crate::common::root;
use crate::common::workspace::Workspace;
use crate::mcp::{agent, spec};

/// A spec's `[[mcp]]` with a name alone runs harness.toml's server of that
/// name; a table of harness.toml that belongs in a spec is an error there.
#[test]
fn a_spec_names_a_server_of_harness_toml() {
    let fake = FakeServer::start(agent);
    let ws = Workspace::new();
    let server = root().join("tests/fixtures/mcp/hostile.py");
    let named = spec("", "").replacen(
        &format!("command = \"python3\"\nargs = [\"{}\"]\n", server.display()),
        "",
        1,
    );
    assert!(!named.contains("python3"), "{named}");
    ws.fake_model(&fake, "timeout_secs = 10")
        .write("specs/mcp.toml", &named);
    let config = ws.path().join("harness.toml");
    let models = std::fs::read_to_string(&config).unwrap();
    let machine = format!(
        "{models}\n[[mcp]]\nname = \"hostile\"\ncommand = \"python3\"\nargs = [\"{}\"]\n",
        server.display()
    );
    ws.write("harness.toml", &machine);
    ws.run_ok(&["specs/mcp.toml", "-m", "fake"]);
    assert_eq!(ws.last_journal()[0]["passed"], true);
    ws.write("harness.toml", &format!("{machine}tools = [\"add\"]\n"));
    ws.run_expect(
        &["specs/mcp.toml", "-m", "fake"],
        2,
        &["harness.toml:", "set it in the spec's [[mcp]]"],
    );
}

#[test]
fn bad_servers_are_errors_at_their_keys() {
    let base = "[prompt]\nuser = \"x\"\n[agent]\n[[tools]]\nname = \"lookup\"\nscript = \"1\"\n\
                [[verify]]\nrule = \"exact\"\nexpected = \"1\"\n";
    let cases = [
        (
            "[[mcp]]\nargs = [\"x\"]\n",
            "mcp.toml:10:1",
            "needs `command`",
        ),
        (
            "[[mcp]]\ncommand = \"srv\"\nurl = \"http://127.0.0.1:1/\"\n",
            "mcp.toml:12:7",
            "not both",
        ),
        (
            "[[mcp]]\ncommand = \"srv\"\ntools = [\"x\", \"lookup\"]\n",
            "mcp.toml:12:15",
            "has the name of a [[tools]] tool",
        ),
        // A name alone is one of harness.toml's servers, and there is none.
        (
            "[[mcp]]\nname = \"kg\"\n",
            "mcp.toml:10:1",
            "harness.toml has no [[mcp]] server of that name",
        ),
    ];
    for (table, at, says) in cases {
        let ws = Workspace::new();
        ws.write("specs/mcp.toml", &format!("{base}{table}"));
        let mut check = crate::common::harness(ws.path());
        check.args(["check", "specs/mcp.toml"]);
        crate::common::expect(&mut check, 2, &[at, says]);
    }
}

#[test]
fn check_starts_each_server_and_judges_its_tools() {
    let ws = Workspace::new();
    // `submit` stays, and a Rhai `echo` takes the name of the server's own.
    let clash = spec("", "isolation = \"shared\"").replace(
        "script = \"args.answer\"",
        "script = \"args.answer\"\n[[tools]]\nname = \"echo\"\nscript = \"1\"",
    );
    ws.write("specs/mcp.toml", &clash);
    let mut check = crate::common::harness(ws.path());
    // The listing it keeps stays in the workspace.
    check.env("HARNESS_CACHE", ws.path().join("cache"));
    check.args(["check", "specs/mcp.toml"]);
    crate::common::expect(
        &mut check,
        2,
        &[
            "tool `echo` of MCP server `hostile` has the name of a [[tools]] tool",
            "is shared: episodes are not isolated",
        ],
    );
    let mut show = crate::common::harness(ws.path());
    show.args(["show", "specs/mcp.toml", "-n", "1"]);
    crate::common::expect(
        &mut show,
        0,
        &["mcp server `hostile` (started in", "  recall"],
    );
}

#[test]
fn check_remembers_a_listing_until_the_server_changes() {
    let ws = Workspace::new();
    let hostile = std::fs::read_to_string(root().join("tests/fixtures/mcp/hostile.py")).unwrap();
    std::fs::create_dir(ws.path().join("srv")).unwrap();
    ws.write("srv/hostile.py", &hostile);
    // The wrapper logs each start outside its own folder, so the log is not
    // one of the files the listing's key covers.
    ws.write(
        "srv/wrapper",
        "#!/bin/sh\necho started >> \"$(dirname \"$(dirname \"$0\")\")/starts.log\"\n\
         exec python3 \"$(dirname \"$0\")/hostile.py\"\n",
    );
    let wrapper = ws.path().join("srv/wrapper");
    let mut mode = std::fs::metadata(&wrapper).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&wrapper, mode).unwrap();
    let text = spec("", "").replace(
        &format!(
            "command = \"python3\"\nargs = [\"{}\"]",
            root().join("tests/fixtures/mcp/hostile.py").display()
        ),
        &format!("command = \"{}\"", wrapper.display()),
    );
    ws.write("specs/mcp.toml", &text);
    let starts = || {
        std::fs::read_to_string(ws.path().join("starts.log"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    let check = |extra: &[&str]| {
        let mut check = crate::common::harness(ws.path());
        check
            .env("HARNESS_CACHE", ws.path().join("cache"))
            .args(["check", "specs/mcp.toml", "--bless"])
            .args(extra);
        crate::common::expect(&mut check, 0, &["mcp  1 instances"])
    };
    let remembered = "tools as an earlier check listed them";
    assert!(!check(&[]).contains(remembered));
    assert_eq!(starts(), 1);
    assert!(check(&[]).contains(remembered));
    assert_eq!(starts(), 1, "a second check started the server again");
    // A tool the spec names that the remembered listing lacks is still an error.
    ws.write(
        "specs/mcp.toml",
        &text.replace("[[mcp]]", "[[mcp]]\ntools = [\"nope\"]"),
    );
    let mut check_bad = crate::common::harness(ws.path());
    check_bad
        .env("HARNESS_CACHE", ws.path().join("cache"))
        .args(["check", "specs/mcp.toml"]);
    crate::common::expect(&mut check_bad, 2, &["lists no tool `nope`"]);
    assert_eq!(starts(), 1);
    ws.write("specs/mcp.toml", &text);
    // The script beside the wrapper changes: the server starts again.
    ws.write("srv/hostile.py", &format!("{hostile}\n# changed\n"));
    assert!(!check(&[]).contains(remembered));
    assert_eq!(starts(), 2);
    assert!(!check(&["--fresh"]).contains(remembered));
    assert_eq!(starts(), 3);
}
