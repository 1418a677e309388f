"""Run a command with stdin on a pseudo-terminal (stdout and stderr stay pipes), as if typed at a
prompt: wait until the command has written a first line on stderr (or a few seconds), then type
the given file's content and Ctrl-D. Prints one JSON object: code, stdout, stderr, and the stderr
seen before anything was typed. Used by test/cli-papercuts.test.ts.

usage: python3 pty-stdin.py INPUT_FILE COMMAND [ARGS...]
"""
import json
import os
import pty
import select
import subprocess
import sys
import time

input_file, command = sys.argv[1], sys.argv[2:]
master, slave = pty.openpty()
p = subprocess.Popen(command, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
os.close(slave)

before = b''
deadline = time.time() + 10
while b'\n' not in before and time.time() < deadline and p.poll() is None:
    ready, _, _ = select.select([p.stderr, master], [], [], 0.2)
    if p.stderr in ready:
        chunk = os.read(p.stderr.fileno(), 4096)
        if not chunk:
            break
        before += chunk
    if master in ready:
        os.read(master, 4096)  # the terminal's echo; not looked at

if p.poll() is None:
    with open(input_file, 'rb') as f:
        os.write(master, f.read())
    os.write(master, b'\x04')  # Ctrl-D at the start of a line: end of input

out = b''
err = b''
try:
    out, err = p.communicate(timeout=30)
except subprocess.TimeoutExpired:
    p.kill()
    out, err = p.communicate()
os.close(master)
print(json.dumps({
    'code': p.returncode,
    'stdout': out.decode('utf8', 'replace'),
    'stderr': (before + err).decode('utf8', 'replace'),
    'before': before.decode('utf8', 'replace'),
}))
