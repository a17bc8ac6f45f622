//! A minimal OpenAI-compatible server on loopback answering every request
//! at once with the same short answer: what the runner benchmarks run
//! against, so their numbers are the harness's own cost.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

fn respond(stream: TcpStream) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut writer = stream;
    loop {
        let mut content_length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some(v) = l.to_ascii_lowercase().strip_prefix("content-length:") {
                content_length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; content_length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let reply = r#"{"id":"b","object":"chat.completion","created":0,"model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":"Ответ: 42"},"finish_reason":"stop"}],"usage":{"prompt_tokens":40,"completion_tokens":4,"total_tokens":44}}"#;
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            reply.len()
        );
        if writer
            .write_all(head.as_bytes())
            .and_then(|_| writer.write_all(reply.as_bytes()))
            .is_err()
        {
            return;
        }
    }
}

/// Starts the server on a free loopback port, in this process; returns the port.
pub fn serve() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = stream.set_nodelay(true);
            std::thread::spawn(move || respond(stream));
        }
    });
    port
}
