#!/usr/bin/env python3
"""http_raw.py - raw-socket HTTP clients for the server tests (not a test
itself): what curl cannot send, and clients that misbehave on purpose.

  http_raw.py send PORT BYTES [TIMEOUT]
      Send BYTES (Python escapes: \\r, \\n, \\x00 ...) to 127.0.0.1:PORT,
      read until the server closes or TIMEOUT seconds (default 10) pass,
      and print what came back, bytes as latin-1. Exit 0 when the server
      closed the connection, 3 on timeout.

  http_raw.py trickle PORT SOURCE COUNT SECONDS
      Open COUNT connections to 127.0.0.1:PORT from the loopback address
      SOURCE (e.g. 127.0.0.2), then keep each one sending a request head
      one byte per second, never finishing it, for SECONDS. Prints
      "opened N" once all are open, then every second "closed N": the
      connections the server has ended so far (refused, shut down or
      reset).
"""
import resource
import socket
import sys
import time

HEAD = b"GET /health HTTP/1.1\r\nHost: slow\r\nX-Slow: " + b"a" * 4096


def send(port, data, timeout):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(timeout)
    out = b""
    code = 0
    try:
        s.sendall(data)
    except OSError:
        pass  # the server may answer and close before reading it all
    deadline = time.monotonic() + timeout
    try:
        while True:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            d = s.recv(65536)
            if not d:
                break
            out += d
    except socket.timeout:
        code = 3
    except OSError:
        pass
    sys.stdout.write(out.decode("latin-1"))
    return code


def trickle(port, source, count, seconds):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = count + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    start = time.monotonic()
    conns = []
    closed = 0
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((source, 0))
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        conns.append([s, 0])
    print("opened %d" % len(conns), flush=True)
    end = start + seconds
    while time.monotonic() < end and conns:
        tick = time.monotonic()
        for c in list(conns):
            s, pos = c
            gone = False
            try:
                gone = s.recv(4096) == b""
            except (BlockingIOError, InterruptedError):
                pass  # nothing from the server: still open
            except OSError:
                gone = True
            if not gone:
                try:
                    s.send(HEAD[pos % len(HEAD):pos % len(HEAD) + 1])
                    c[1] = pos + 1
                except (BlockingIOError, InterruptedError):
                    pass  # still connecting, or a full buffer
                except OSError:
                    gone = True
            if gone:
                closed += 1
                s.close()
                conns.remove(c)
        print("closed %d" % closed, flush=True)
        time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    for s, _ in conns:
        s.close()
    return 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "send":
        data = argv[3].encode("latin-1").decode("unicode_escape").encode("latin-1")
        return send(int(argv[2]), data, float(argv[4]) if len(argv) > 4 else 10.0)
    if len(argv) == 6 and argv[1] == "trickle":
        return trickle(int(argv[2]), argv[3], int(argv[4]), float(argv[5]))
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
