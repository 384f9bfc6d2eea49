#!/usr/bin/env python3
"""smtp_sink.py - a small SMTP server for the e-mail tests (not a test
itself): it takes every message and appends one JSON line per message to
LOG: the envelope (mail_from, rcpt), the message as received (data, with
the DATA phase's dot-stuffing undone), the credentials it came with and
whether the session was under TLS; and a line per AUTH attempt (user,
accepted, under TLS) and per failed TLS handshake. It writes its port to PORT_FILE once
it listens.

  smtp_sink.py PORT_FILE LOG [--auth USER:PASS] [--tls CERT KEY]
               [--reject-rcpt] [--hang]

--auth: AUTH PLAIN and LOGIN are offered, and MAIL is refused (530)
until the client has authenticated with USER:PASS (535 for others).
--tls: STARTTLS is offered with CERT/KEY (without it, none is: a client
that requires TLS must stop before MAIL).
--reject-rcpt: every RCPT gets 550.
--hang: the message's data is taken, logged as {"hanging": true} and
never answered: a relay that hangs after the connection's handshake
(whose own time limit is shorter than a whole send's).
"""
import base64
import json
import os
import socket
import socketserver
import ssl
import sys
import threading

args = sys.argv[1:]
port_file, log_path = args[0], args[1]
auth = None
tls_files = None
reject_rcpt = False
hang = False
i = 2
while i < len(args):
    if args[i] == "--auth":
        auth = args[i + 1]
        i += 2
    elif args[i] == "--tls":
        tls_files = (args[i + 1], args[i + 2])
        i += 3
    elif args[i] == "--reject-rcpt":
        reject_rcpt = True
        i += 1
    elif args[i] == "--hang":
        hang = True
        i += 1
    else:
        sys.exit("smtp_sink.py: unknown argument " + args[i])

lock = threading.Lock()


def record(entry):
    with lock, open(log_path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


class Session(socketserver.StreamRequestHandler):
    timeout = 30

    def say(self, line):
        self.wfile.write((line + "\r\n").encode())
        self.wfile.flush()

    def line(self):
        raw = self.rfile.readline(4096)
        if not raw:
            raise EOFError
        return raw.decode("utf-8", "replace").rstrip("\r\n")

    def starttls(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*tls_files)
        self.connection = ctx.wrap_socket(self.connection, server_side=True)
        self.rfile = self.connection.makefile("rb")
        self.wfile = self.connection.makefile("wb")

    def handle(self):
        state = {"tls": False, "user": None, "password": None,
                 "mail_from": None, "rcpt": []}
        self.say("220 sink.test ESMTP ready")
        try:
            while True:
                cmd = self.line()
                verb = cmd.split(" ", 1)[0].upper()
                if verb in ("EHLO", "HELO"):
                    state["helo"] = cmd[5:]
                    caps = ["sink.test", "8BITMIME", "SIZE 1000000"]
                    if tls_files and not state["tls"]:
                        caps.append("STARTTLS")
                    if auth:
                        caps.append("AUTH PLAIN LOGIN")
                    for c in caps[:-1]:
                        self.say("250-" + c)
                    self.say("250 " + caps[-1])
                elif verb == "STARTTLS" and tls_files and not state["tls"]:
                    self.say("220 go ahead")
                    try:
                        self.starttls()
                    except (ssl.SSLError, OSError) as e:
                        record({"tls_failed": str(e)})
                        return
                    state["tls"] = True
                elif verb == "AUTH" and auth:
                    parts = cmd.split(" ")
                    mech = parts[1].upper() if len(parts) > 1 else ""
                    if mech == "PLAIN":
                        blob = parts[2] if len(parts) > 2 else None
                        if blob is None:
                            self.say("334 ")
                            blob = self.line()
                        fields = base64.b64decode(blob).split(b"\0")
                        user, pw = fields[1].decode(), fields[2].decode()
                    elif mech == "LOGIN":
                        if len(parts) > 2:
                            user = base64.b64decode(parts[2]).decode()
                        else:
                            self.say("334 VXNlcm5hbWU6")
                            user = base64.b64decode(self.line()).decode()
                        self.say("334 UGFzc3dvcmQ6")
                        pw = base64.b64decode(self.line()).decode()
                    else:
                        self.say("504 unknown mechanism")
                        continue
                    ok = user + ":" + pw == auth
                    record({"auth": user, "accepted": ok,
                            "tls": state["tls"]})
                    if ok:
                        state["user"], state["password"] = user, pw
                        self.say("235 authenticated")
                    else:
                        self.say("535 bad credentials")
                elif verb == "MAIL":
                    if auth and state["user"] is None:
                        self.say("530 authentication required")
                        continue
                    state["mail_from"] = cmd[cmd.index(":") + 1:].strip()
                    state["rcpt"] = []
                    self.say("250 ok")
                elif verb == "RCPT":
                    if reject_rcpt:
                        self.say("550 no such mailbox here")
                        continue
                    state["rcpt"].append(cmd[cmd.index(":") + 1:].strip())
                    self.say("250 ok")
                elif verb == "DATA":
                    self.say("354 end with a dot")
                    lines = []
                    while True:
                        ln = self.rfile.readline(100000).decode("utf-8",
                                                                "replace")
                        if ln in (".\r\n", ".\n", ""):
                            break
                        if ln.startswith(".."):
                            ln = ln[1:]
                        lines.append(ln)
                    if hang:
                        record({"hanging": True})
                        self.rfile.read()  # until the client gives up
                        return
                    record({"mail_from": state["mail_from"],
                            "rcpt": state["rcpt"], "tls": state["tls"],
                            "user": state["user"],
                            "password": state["password"],
                            "helo": state.get("helo"),
                            "data": "".join(lines)})
                    self.say("250 queued")
                elif verb in ("RSET", "NOOP"):
                    self.say("250 ok")
                elif verb == "QUIT":
                    self.say("221 bye")
                    return
                else:
                    self.say("502 not implemented")
        except (EOFError, ConnectionError, socket.timeout, ssl.SSLError):
            return


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", 0), Session)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
