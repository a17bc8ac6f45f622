"""Loopback shim between lm-eval and llama-cpp-python's server.

lm-eval's `local-completions` model counts context tokens with a tokenizer of
its own choosing; its `remote` backend asks the server at /tokenizer_info,
/tokenize and /detokenize (vLLM's endpoints). llama-cpp-python serves the same
tokenizer at /extras/tokenize and /extras/detokenize instead. This shim serves
vLLM's three endpoints from those, so lm-eval counts tokens with exactly the
server's tokenizer, and forwards /v1/completions (and any GET) untouched
unless --prompt-prefix is given, recording each tokenization and each
completion request and response as one JSON line.

With --fresh, every completion is preceded by a one-token request to the same
server whose prompt shares nothing with the next one but the BOS. The server
reuses the longest common prefix of consecutive prompts and evaluates only
the rest, and a row evaluated alone comes out slightly different from the
same row evaluated with others (measured: -5.8266 against -5.8370 for
" 11" after " 1"). After the flush, every prompt is evaluated whole, so its
log-likelihoods no longer depend on which request came before.

Python standard library only. Usage:
  python3 shim.py --upstream http://127.0.0.1:PORT [--upstream ...] --capture FILE --url-file FILE
It listens on 127.0.0.1 at a free port and writes its URL to --url-file.
"""

import argparse
import itertools
import json
import os
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TIMEOUT_S = 600
# Flush prompts: one token each, sharing no token with a prompt that does not
# start with them.
FLUSHES = ["\u2042", "\u203b"]


def call(url, body=None):
    """(status, bytes) of a GET (body None) or a JSON POST to url."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Shim:
    def __init__(self, upstreams, capture_path, prompt_prefix, fresh=False):
        # Completions go round-robin over the upstreams (identical servers,
        # each serving one request at a time); tokenization to the first.
        self.upstreams = [u.rstrip("/") for u in upstreams]
        self.upstream = self.upstreams[0]
        self.turn = itertools.cycle(self.upstreams)
        self.capture = open(capture_path, "a", encoding="utf-8")
        self.prompt_prefix = prompt_prefix
        self.lock = threading.Lock()
        self.fresh = fresh
        # A flush and the completion after it must reach a server together.
        self.server_locks = {u: threading.Lock() for u in self.upstreams}
        # The server puts the model's BOS (if it adds one) before every
        # tokenization and drops it again from an echoed prompt; lm-eval asks
        # for tokens without special ones. Tokenizing "" shows which it is.
        self.bos = self.upstream_tokens("")

    def upstream_tokens(self, text):
        status, raw = call(self.upstream + "/extras/tokenize", {"input": text})
        if status != 200:
            raise RuntimeError(f"upstream /extras/tokenize answered {status}: {raw[:200]!r}")
        return json.loads(raw)["tokens"]

    def tokenize(self, text):
        tokens = self.upstream_tokens(text)
        tokens = tokens[len(self.bos) :] if tokens[: len(self.bos)] == self.bos else tokens
        self.record("tokenize", {"prompt": text}, 200, {"tokens": tokens})
        return tokens

    def detokenize(self, tokens):
        status, raw = call(self.upstream + "/extras/detokenize", {"tokens": tokens})
        if status != 200:
            raise RuntimeError(f"upstream /extras/detokenize answered {status}: {raw[:200]!r}")
        return json.loads(raw)["text"]

    def complete(self, upstream, body):
        """(status, bytes) of a completion, after a flush when --fresh."""
        with self.server_locks[upstream]:
            if self.fresh:
                prompt = body.get("prompt") if isinstance(body.get("prompt"), str) else ""
                flush = next(f for f in FLUSHES if not prompt.startswith(f))
                status, raw = call(upstream + "/v1/completions", {"prompt": flush, "max_tokens": 1, "temperature": 0})
                if status != 200:
                    raise RuntimeError(f"the flush answered {status}: {raw[:200]!r}")
            return call(upstream + "/v1/completions", body)

    def next_upstream(self):
        with self.lock:
            return next(self.turn)

    def record(self, endpoint, request, status, response, upstream=None):
        line = {"endpoint": endpoint, "request": request, "status": status, "response": response}
        if upstream is not None:
            line["upstream"] = self.upstreams.index(upstream)
        line = json.dumps(line, ensure_ascii=False)
        with self.lock:
            self.capture.write(line + "\n")
            self.capture.flush()


def handler(shim):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):
            """Quiet: lm-eval makes thousands of requests."""

        def reply(self, status, raw):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def reply_json(self, value):
            self.reply(200, json.dumps(value, ensure_ascii=False).encode("utf-8"))

        def do_GET(self):
            if self.path == "/tokenizer_info":
                # No special token strings: lm-eval needs them only for an
                # empty context or for generation, neither used here.
                self.reply_json({"tokenizer": "llama-cpp-python /extras/tokenize", "bos_ids": shim.bos})
                return
            self.reply(*call(shim.upstream + self.path))

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            try:
                if self.path == "/tokenize":
                    self.reply_json({"tokens": shim.tokenize(body["prompt"])})
                elif self.path == "/detokenize":
                    self.reply_json({"prompt": shim.detokenize(body["tokens"])})
                elif self.path == "/v1/completions":
                    if shim.prompt_prefix and isinstance(body.get("prompt"), str):
                        body["prompt"] = shim.prompt_prefix + body["prompt"]
                    upstream = shim.next_upstream()
                    status, raw = shim.complete(upstream, body)
                    try:
                        response = json.loads(raw)
                    except ValueError:
                        response = raw.decode("utf-8", "replace")
                    shim.record("completions", body, status, response, upstream)
                    self.reply(status, raw)
                else:
                    self.reply(404, b'{"error": "not served by the shim"}')
            except (RuntimeError, KeyError, OSError) as e:
                self.reply(502, json.dumps({"error": str(e)}).encode("utf-8"))

    return Handler


def main(argv):
    parser = argparse.ArgumentParser(description="lm-eval <-> llama-cpp-python tokenizer shim")
    parser.add_argument("--upstream", required=True, action="append", help="a server URL; repeat for several")
    parser.add_argument("--capture", required=True)
    parser.add_argument("--url-file", required=True)
    parser.add_argument(
        "--prompt-prefix",
        default="",
        help="text put before every forwarded completion prompt (e.g. the model's BOS token text)",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="flush the server's prompt cache before every completion (see above)",
    )
    args = parser.parse_args(argv)
    shim = Shim(args.upstream, args.capture, args.prompt_prefix, args.fresh)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(shim))
    with open(args.url_file + ".tmp", "w", encoding="utf-8") as f:
        f.write(f"http://127.0.0.1:{server.server_address[1]}\n")
    # Renamed whole, so a reader never sees half a URL.
    os.replace(args.url_file + ".tmp", args.url_file)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
