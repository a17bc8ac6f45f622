"""A runner for `another_language.toml`: serves the shell functions of
solution.sh to the checker. Each call runs `name args...` under /bin/sh
after sourcing the solution; its output, without the last newline, is
answered as a JSON number when it is an integer, else as a string. A
non-zero exit status is raised as an error.
"""
import json
import os
import re
import subprocess

read_fd, write_fd = (int(fd) for fd in os.environ["HARNESS_CHANNEL"].split(","))
out = os.fdopen(write_fd, "wb")


def send(message):
    out.write((json.dumps(message) + "\n").encode())
    out.flush()


with open("solution.sh") as f:
    names = re.findall(r"^\s*([A-Za-z_]\w*)\s*\(\)", f.read(), re.M)
send({"ready": {"functions": names, "modules": {}}})
for line in os.fdopen(read_fd, "rb"):
    call = json.loads(line)
    args = [str(a) for a in call["args"]]
    run = subprocess.run(["/bin/sh", "-c", '. ./solution.sh; "$@"', "sh", call["call"], *args],
                         capture_output=True, text=True, timeout=5)
    text = run.stdout.rstrip("\n")
    if run.returncode != 0:
        send({"raised": {"type": "RuntimeError", "message": "exit status %d" % run.returncode}})
    elif re.fullmatch(r"-?\d+", text):
        send({"value": int(text)})
    else:
        send({"value": text})
