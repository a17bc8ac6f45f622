//! `harness view`: serves the viewer of a results folder (`crate::view`).

use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use super::exit::{Exit, fail};
use crate::output::outln;

/// `harness view` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ViewArgs {
    /// The results folder (what `harness run --results` wrote).
    #[arg(default_value = "results")]
    pub results: PathBuf,
    /// The address to listen on: loopback unless a token guards it.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// The port (0: a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Require this token of every request (`?token=` in the URL); without
    /// a value, one is made up and printed in the URL. Needed to listen
    /// beyond loopback.
    #[arg(long, num_args = 0..=1, default_missing_value = "")]
    pub token: Option<String>,
    /// Open the URL in the desktop's browser (`xdg-open`).
    #[arg(long)]
    pub open: bool,
}

/// Runs `harness view` until the process is stopped.
pub(crate) fn run(args: &ViewArgs) -> Exit {
    if !args.results.is_dir() {
        return fail(format!(
            "{}: no such results folder (`harness run` writes one; give its path)",
            args.results.display()
        ));
    }
    // The viewer reads a spec's dataset only to show how reports name the
    // spec: from the cache `harness run` filled, never the network.
    crate::source::dataset::hf::set_offline(true);
    let addr = SocketAddr::new(args.host, args.port);
    if !crate::view::is_loopback(&addr) && args.token.is_none() {
        return fail(format!(
            "{addr} can be reached from other machines: give --token (with a value, or none to make one up) to listen there"
        ));
    }
    let token = match args.token.as_deref() {
        Some("") => match made_up_token() {
            Ok(t) => Some(t),
            Err(e) => return fail(format!("cannot make up a token: {e}")),
        },
        other => other.map(str::to_owned),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    runtime.block_on(async {
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => return fail(format!("cannot listen on {addr}: {e}")),
        };
        let bound = listener.local_addr().unwrap_or(addr);
        let url = match &token {
            Some(t) => format!("http://{bound}/?token={t}"),
            None => format!("http://{bound}/"),
        };
        outln!(
            "harness view: {url} (serving {}; Ctrl-C stops)",
            args.results.display()
        );
        if args.open {
            // The desktop's opener, if any; the URL is printed either way.
            // The browser needs the desktop's variables, never a key.
            let mut opener = std::process::Command::new("xdg-open");
            crate::secrets::scrub_env(opener.arg(&url));
            let _ = opener.spawn();
        }
        match crate::view::serve(listener, &args.results, token).await {
            Ok(()) => Exit::Success,
            Err(e) => fail(format!("the viewer stopped: {e}")),
        }
    })
}

/// 128 random bits from the kernel, as hex.
fn made_up_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
