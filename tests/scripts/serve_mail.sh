#!/usr/bin/env bash
# serve_mail.sh - issue 22's e-mail notifications over real HTTP and real
# SMTP: `sqlbus serve` sends through relays that are small SMTP servers
# of this test (lib/smtp_sink.py, each on its own port).
#  - the settings: a relay that is not a host name, a header injection in
#    `to`, two senders, 33 recipients: each a 400 naming the field, and
#    the stored settings unchanged;
#  - the test message (POST /api/notifications/email/test, as
#    ServicePulse sends it: no body) reaches every recipient, with its
#    headers, AUTH credentials when an account is set, and never the
#    password in an answer;
#  - a refused login, a relay that refuses every recipient, a closed
#    port: 502 naming smtp_server, with the relay's answer;
#  - enable_tls: STARTTLS is required: a relay that offers none gets no
#    credentials and no message; one whose certificate is not trusted
#    gets the handshake and nothing after it;
#  - the health-check notifications (--check-interval 1s): a check that
#    starts failing is mailed once, a relay that refuses it is tried
#    again at the next check, and the check passing again is mailed;
#  - a relay that hangs does not hold up SIGTERM: the send under way is
#    abandoned.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"
# shellcheck source=lib/serve_common.bash
. "$here/lib/serve_common.bash"
command -v python3 >/dev/null || fail "this test needs python3"
command -v openssl >/dev/null || fail "this test needs openssl (apt-get install openssl)"
have_sql || fail "this test needs the backend's SQL client"

# sink NAME ARGS...: an SMTP sink; its port in ${NAME}_port, its log
# $tmp/NAME.log (one JSON line per message or AUTH attempt).
sink() {
    local name=$1
    shift
    : >"$tmp/$name.log"
    python3 "$here/lib/smtp_sink.py" "$tmp/$name.port" "$tmp/$name.log" "$@" \
        2>"$tmp/$name.err" &
    bg_pids+=("$!")
    wait_for_file "$tmp/$name.port" 10
    printf -v "${name}_port" '%s' "$(cat "$tmp/$name.port")"
}
# messages NAME: how many messages sink NAME has taken.
messages() { jq -s '[.[] | select(has("data"))] | length' "$tmp/$1.log"; }

post_settings() { # NAME JSON
    req "$1" -X POST -H 'Content-Type: application/json' -d "$2" \
        "$base/api/notifications/email"
}
send_test() { req "$1" -m 60 -X POST "$base/api/notifications/email/test"; }

sink plain
sink authed --auth ops:s3cret
sink refuser --reject-rcpt
sink hang --hang
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
    -keyout "$tmp/relay.key" -out "$tmp/relay.crt" >/dev/null 2>&1 ||
    fail "openssl could not make a certificate"
sink tls --tls "$tmp/relay.crt" "$tmp/relay.key" --auth ops:s3cret
# A port nothing listens on: taken, then let go.
closed_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

start_server serve --check-interval 1s

# With no relay the test says what is missing.
send_test norelay
expect norelay 400 .field smtp_server

post_settings good "{\"smtp_server\":\"127.0.0.1\",\"smtp_port\":$plain_port,\"from\":\"sqlbus@example.test\",\"to\":\"ops@example.test; oncall@example.test,\",\"enable_tls\":false}"
expect good 200 .smtp_server 127.0.0.1 .smtp_port "$plain_port" .enabled false
req stored "$base/api/notifications/email"
cp "$tmp/stored.json" "$tmp/before.json"
bad_setting() { # NAME FIELD JSON
    post_settings "$1" "$3"
    expect "$1" 400 .field "$2"
    req after "$base/api/notifications/email"
    cmp -s "$tmp/after.json" "$tmp/before.json" ||
        fail "$1 changed the stored settings: $(cat "$tmp/after.json")"
}
bad_setting hostport smtp_server '{"smtp_server":"mail.example.test:25"}'
bad_setting spaced smtp_server '{"smtp_server":"mail example"}'
bad_setting crlf to '{"to":"ops@example.test\r\nBcc: spy@example.test"}'
bad_setting angle to '{"to":"Ops <ops@example.test>"}'
bad_setting twofrom from '{"from":"a@example.test, b@example.test"}'
bad_setting nofrom from '{"from":"sqlbus"}'
many=$(seq 1 33 | sed 's/.*/r&@example.test/' | paste -sd, -)
bad_setting many to "{\"to\":\"$many\"}"
grep -q 'at most 32' "$tmp/many.json" || fail "the limit is not named: $(cat "$tmp/many.json")"
bad_setting port smtp_port '{"smtp_port":0}'
ok "bad e-mail settings are refused naming the field, nothing stored"

send_test sent
expect sent 200 .sent true
[ "$(messages plain)" = 1 ] || fail "the relay took $(messages plain) messages: $(cat "$tmp/plain.log")"
jq -se 'any(.[]; has("data") and .mail_from == "<sqlbus@example.test>" and
       .rcpt == ["<ops@example.test>", "<oncall@example.test>"] and .tls == false)' \
    "$tmp/plain.log" >/dev/null || fail "envelope: $(cat "$tmp/plain.log")"
jq -r 'select(has("data")) | .data' "$tmp/plain.log" >"$tmp/plain.msg"
for h in '^From: sqlbus@example.test' '^To: ops@example.test, oncall@example.test' \
    '^Subject: \[sqlbus\] .*: test notification' '^Date: [A-Z][a-z][a-z], ' \
    '^Message-ID: <' '^Content-Type: text/plain; charset=utf-8'; do
    grep -q "$h" "$tmp/plain.msg" || fail "no header $h in: $(cat "$tmp/plain.msg")"
done
grep -q 'test notification from sqlbus serve' "$tmp/plain.msg" || fail "body: $(cat "$tmp/plain.msg")"
ok "the test message reaches each recipient with its headers"

post_settings auth "{\"smtp_server\":\"127.0.0.1\",\"smtp_port\":$authed_port,\"from\":\"sqlbus@example.test\",\"to\":\"ops@example.test\",\"authorization_account\":\"ops\",\"authorization_password\":\"s3cret\"}"
expect auth 200 .authentication_account ops
grep -q s3cret "$tmp/auth.json" && fail "the password is answered: $(cat "$tmp/auth.json")"
send_test authsent
expect authsent 200 .sent true
jq -se 'any(.[]; has("data") and .user == "ops" and .password == "s3cret")' "$tmp/authed.log" >/dev/null ||
    fail "no authenticated message: $(cat "$tmp/authed.log")"
# A save without the password keeps it (ServicePulse's form never sees it).
post_settings keep "{\"smtp_server\":\"127.0.0.1\",\"smtp_port\":$authed_port,\"from\":\"sqlbus@example.test\",\"to\":\"ops@example.test\",\"authorization_account\":\"ops\"}"
expect keep 200
send_test kept
expect kept 200
post_settings wrong "{\"smtp_server\":\"127.0.0.1\",\"smtp_port\":$authed_port,\"from\":\"sqlbus@example.test\",\"to\":\"ops@example.test\",\"authorization_account\":\"ops\",\"authorization_password\":\"guess\"}"
send_test refused
expect refused 502 .field smtp_server .error bad_gateway
grep -q '535' "$tmp/refused.json" || fail "the relay's answer is not named: $(cat "$tmp/refused.json")"
[ "$(messages authed)" = 2 ] || fail "messages after a refused login: $(cat "$tmp/authed.log")"
ok "AUTH with the stored account; a refused login is a 502 with the relay's answer"

post_settings rcpt "{\"smtp_server\":\"127.0.0.1\",\"smtp_port\":$refuser_port,\"from\":\"sqlbus@example.test\",\"to\":\"ops@example.test\"}"
send_test norcpt
expect norcpt 502 .field smtp_server
post_settings closed "{\"smtp_server\":\"localhost\",\"smtp_port\":$closed_port,\"from\":\"sqlbus@example.test\",\"to\":\"ops@example.test\"}"
send_test down
expect down 502 .field smtp_server
ok "a relay that refuses every recipient, and a closed port: 502"

# enable_tls: a relay with no STARTTLS gets no credentials and no message.
post_settings notls "{\"smtp_server\":\"127.0.0.1\",\"smtp_port\":$authed_port,\"from\":\"sqlbus@example.test\",\"to\":\"ops@example.test\",\"authorization_account\":\"ops\",\"authorization_password\":\"s3cret\",\"enable_tls\":true}"
expect notls 200 .enable_tls true
: >"$tmp/authed.log"
send_test plaintext
expect plaintext 502 .field smtp_server
[ ! -s "$tmp/authed.log" ] || fail "credentials or a message went out without TLS: $(cat "$tmp/authed.log")"
# A relay whose certificate nobody vouches for: the handshake, then
# nothing.
post_settings untrusted "{\"smtp_server\":\"127.0.0.1\",\"smtp_port\":$tls_port,\"from\":\"sqlbus@example.test\",\"to\":\"ops@example.test\",\"authorization_account\":\"ops\",\"authorization_password\":\"s3cret\",\"enable_tls\":true}"
send_test handshake
expect handshake 502 .field smtp_server
grep -qi 'certificate' "$tmp/handshake.json" || fail "the TLS failure is not named: $(cat "$tmp/handshake.json")"
jq -se 'any(.[]; has("tls_failed"))' "$tmp/tls.log" >/dev/null || fail "no STARTTLS handshake: $(cat "$tmp/tls.log")"
[ "$(messages tls)" = 0 ] && jq -se 'any(.[]; has("auth")) | not' "$tmp/tls.log" >/dev/null ||
    fail "something went out over an untrusted connection: $(cat "$tmp/tls.log")"
ok "enable_tls requires STARTTLS and a trusted certificate"

# Health-check notifications. A relay that refuses first: the mail is
# tried again at the next check once the relay takes it.
post_settings refusing "{\"smtp_server\":\"127.0.0.1\",\"smtp_port\":$refuser_port,\"from\":\"sqlbus@example.test\",\"to\":\"ops@example.test\"}"
req on -X POST -H 'Content-Type: application/json' -d '{"enabled":true}' \
    "$base/api/notifications/email/toggle"
expect on 200 .enabled true
: >"$tmp/plain.log"
printf 'x' | sb publish --queue deadletter >/dev/null # a failed import
refused_logged() { grep -q 'health-check notification was not sent' "$tmp/serve.err"; }
within 30 "a refused notification logged" refused_logged
post_settings taking "{\"smtp_server\":\"127.0.0.1\",\"smtp_port\":$plain_port,\"from\":\"sqlbus@example.test\",\"to\":\"ops@example.test\"}"
mailed() { [ "$(messages plain)" -ge "$1" ]; }
within 30 "the failing check mailed" mailed 1
jq -r 'select(has("data")) | .data' "$tmp/plain.log" >"$tmp/fail.msg"
grep -q '^Subject: \[sqlbus\] .*: Failed imports failed' "$tmp/fail.msg" || fail "subject: $(cat "$tmp/fail.msg")"
grep -q '^FAIL  Failed imports' "$tmp/fail.msg" && grep -q 'could not be imported' "$tmp/fail.msg" ||
    fail "body: $(cat "$tmp/fail.msg")"
[ "$(grep -c 'health-check notification was not sent' "$tmp/serve.err")" = 1 ] ||
    fail "the refusals are logged more than once: $(cat "$tmp/serve.err")"
# Three more checks while it fails: no second message.
evaluations() { curl -s "$base/metrics" | sed -n 's/^sqlbus_notify_evaluations_total \([0-9]*\)$/\1/p'; }
n0=$(evaluations)
past() { [ "$(evaluations)" -ge $((n0 + 3)) ]; }
within 30 "three more evaluations" past
[ "$(messages plain)" = 1 ] || fail "a failing check was mailed again: $(cat "$tmp/plain.log")"
# The operator removes the bad row: the check passes, and says so.
sql "DELETE FROM ${prefix}failed_imports"
within 30 "the passing check mailed" mailed 2
jq -rs '[.[] | select(has("data"))][1].data' "$tmp/plain.log" >"$tmp/pass.msg"
grep -q '^Subject: \[sqlbus\] .*: Failed imports passes again' "$tmp/pass.msg" || fail "subject: $(cat "$tmp/pass.msg")"
grep -q '^PASS  Failed imports' "$tmp/pass.msg" || fail "body: $(cat "$tmp/pass.msg")"
# The sink records a message before it answers; serve counts it after.
counted() { [ "$(curl -s "$base/metrics" | sed -n 's/^sqlbus_notify_sent_total //p')" = 2 ]; }
within 10 "two notifications counted in /metrics" counted
ok "a failing check is mailed once, retried after a refusal, and its recovery mailed"

# A relay that takes the message and never answers: the next change's
# send hangs (30 s at most), and SIGTERM does not wait for it.
post_settings hangs "{\"smtp_server\":\"127.0.0.1\",\"smtp_port\":$hang_port,\"from\":\"sqlbus@example.test\",\"to\":\"ops@example.test\"}"
printf 'x' | sb publish --queue deadletter >/dev/null
hanging() { jq -se 'any(.[]; .hanging == true)' "$tmp/hang.log" >/dev/null; }
within 30 "a send to the relay that hangs" hanging
kill -TERM "$pid"
wait_exit "$pid" 10
[ "$wait_rc" -eq 0 ] || fail "serve exited $wait_rc after SIGTERM"
ok "serve stops at once, abandoning a send to a relay that hangs"
