#!/usr/bin/env python3
"""http_raw.py - raw-socket HTTP clients for the server tests (not a test
itself): what curl cannot send, and clients that misbehave on purpose.

  http_raw.py send PORT BYTES [TIMEOUT]
      Send BYTES (Python escapes: \\r, \\n, \\x00 ...) to 127.0.0.1:PORT,
      read until the server closes or TIMEOUT seconds (default 10) pass,
      and print what came back, bytes as latin-1. Exit 0 when the server
      closed the connection, 3 on timeout.

  http_raw.py exchange PORT BYTES TIMEOUT TRICKLE_MS PREFIX
      One request/answer, as the data-driven API cases check curl's: send
      BYTES (escapes as for send), one byte every TRICKLE_MS milliseconds
      when that is not 0, until the server answers or closes; read the
      answer (up to its Content-Length, or until the server closes) and
      write its status to PREFIX.status ("000" when the server closed
      without one), its head to PREFIX.h and its body to PREFIX.json.
      Exit 0, or 3 when the server did neither within TIMEOUT seconds.

  http_raw.py trickle PORT SOURCE COUNT SECONDS
      Open COUNT connections to 127.0.0.1:PORT from the loopback address
      SOURCE (e.g. 127.0.0.2), then keep each one sending a request head
      one byte per second, never finishing it, for SECONDS. Prints
      "opened N" once all are open, then every second "closed N": the
      connections the server has ended so far (refused, shut down or
      reset).
"""
import codecs
import os
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


def complete(out):
    """Whether `out` holds a whole answer: its head and Content-Length
    bytes of body (none when it names no length: read to the close)."""
    end = out.find(b"\r\n\r\n")
    if end < 0:
        return False
    for line in out[:end].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return len(out) - end - 4 >= int(value.strip())
            except ValueError:
                return False
    return False


def exchange(port, data, timeout, trickle_ms, prefix):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setblocking(False)
    deadline = time.monotonic() + timeout
    sent = 0
    out = b""
    closed = False
    while time.monotonic() < deadline and not closed and not complete(out):
        if sent < len(data):
            n = 1 if trickle_ms > 0 else len(data) - sent
            try:
                sent += s.send(data[sent:sent + n])
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                sent = len(data)  # the server stopped reading: answer?
        try:
            d = s.recv(65536)
            if d:
                out += d
            else:
                closed = True
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            closed = True
        if not closed and not complete(out):
            time.sleep(trickle_ms / 1000.0 if trickle_ms > 0 and sent < len(data)
                       else 0.01)
    s.close()
    head, _, body = out.partition(b"\r\n\r\n")
    status = "000"
    if out.startswith(b"HTTP/"):
        status = out.split(b" ", 2)[1].decode("latin-1")
    with open(prefix + ".status", "w") as f:
        f.write(status)
    with open(prefix + ".h", "wb") as f:
        f.write(head + b"\r\n")
    with open(prefix + ".json", "wb") as f:
        f.write(body)
    return 0 if closed or complete(out) else 3


def trickle(port, source, count, seconds):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = count + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    # A machine whose hard limit is lower opens what it may; the "opened"
    # line says how many, and the callers ask for far more than the
    # server's limits, so the test still shows them.
    if hard != resource.RLIM_INFINITY and hard < want:
        count = max(hard - 64, 1)
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


def arg_bytes(a):
    """An argument's bytes as given, with Python's escapes (\\r, \\x00 ...)
    turned into the bytes they name."""
    return codecs.decode(os.fsencode(a), "unicode_escape").encode("latin-1")


def main(argv):
    if len(argv) >= 3 and argv[1] == "send":
        data = arg_bytes(argv[3])
        return send(int(argv[2]), data, float(argv[4]) if len(argv) > 4 else 10.0)
    if len(argv) == 7 and argv[1] == "exchange":
        data = arg_bytes(argv[3])
        return exchange(int(argv[2]), data, float(argv[4]), int(argv[5]), argv[6])
    if len(argv) == 6 and argv[1] == "trickle":
        return trickle(int(argv[2]), argv[3], int(argv[4]), float(argv[5]))
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
