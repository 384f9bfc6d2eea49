#!/usr/bin/env bash
# cli_schema.sh - `sqlbus schema print|verify|migrate` (rules T6, T7, T8,
# T33).
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/cli_common.bash
. "$here/lib/cli_common.bash"

# T33: print the DDL for both backends, with the prefix.
sb schema print --backend sqlite >"$tmp/sqlite.sql"
grep -qi "create table.*${prefix}messages" "$tmp/sqlite.sql" || fail "sqlite DDL: $(cat "$tmp/sqlite.sql")"
grep -qi 'blob' "$tmp/sqlite.sql" || fail "sqlite DDL has no BLOB payload"
sb schema print --backend postgresql >"$tmp/pg.sql"
grep -qi "create table.*${prefix}messages" "$tmp/pg.sql" || fail "postgresql DDL: $(cat "$tmp/pg.sql")"
grep -qi 'bytea' "$tmp/pg.sql" || fail "postgresql DDL has no bytea payload"
grep -q 'COLLATE "C"' "$tmp/pg.sql" || fail "postgresql DDL has no byte-exact collation"
# C10: the channel's three tables and its ack sequence come with it.
for t in channel_messages channel_subscribers recovery_state channel_ack_seq; do
    grep -qi "create .*${prefix}$t" "$tmp/sqlite.sql" || fail "sqlite DDL lacks $t"
    grep -qi "create .*${prefix}$t" "$tmp/pg.sql" || fail "postgresql DDL lacks $t"
done
# The subcommand's own --prefix, and the default prefix.
# (Into a file first: grep -q leaves at its first match, and a write
# after that fails, which pipefail would report.)
"$SQLBUS" schema print --backend sqlite --prefix other_ >"$tmp/p.sql"
grep -qi 'create table.*other_messages' "$tmp/p.sql" || fail "schema print --prefix"
"$SQLBUS" schema print --backend postgresql >"$tmp/p.sql"
grep -qi 'create table.*sqlbus_messages' "$tmp/p.sql" || fail "default prefix"
# Without --backend: the one --db names.
sb schema print >"$tmp/p.sql"
grep -qi "$([ "$backend" = sqlite ] && echo blob || echo bytea)" "$tmp/p.sql" ||
    fail "schema print without --backend does not follow --db"
ok "schema print"

# Issue 6: SQL Server's DDL: the transport's table (datetime2(7) times,
# the binary collation on queue, a nonclustered key, both indexes) and
# the channel's three tables and ack sequence.
expect_exit 0 sb schema print --backend mssql
for want in "CREATE TABLE ${prefix}messages" 'datetime2(7)' \
    'nvarchar(200) COLLATE Latin1_General_100_BIN2' 'PRIMARY KEY NONCLUSTERED' \
    "${prefix}messages_claim_idx" "ON ${prefix}messages (queue, priority DESC, available_at, created_at)" \
    "CREATE TABLE ${prefix}counts" "CREATE SEQUENCE ${prefix}channel_ack_seq AS bigint" \
    "CREATE TABLE ${prefix}channel_messages" "CREATE TABLE ${prefix}channel_subscribers" \
    "CREATE TABLE ${prefix}recovery_state" "CREATE TABLE ${prefix}failed_messages" \
    "MERGE ${prefix}failed_counts" "CREATE FULLTEXT INDEX ON ${prefix}failed_messages" \
    "CREATE TABLE ${prefix}operations"; do
    grep -qF "$want" "$tmp/out" || fail "mssql DDL lacks $want: $(cat "$tmp/out")"
done
ok "schema print --backend mssql"

# Issue 17: --statements prints every statement text of every module,
# each under its name, for each backend; only print takes it.
for b in sqlite postgresql mssql; do
    expect_exit 0 sb schema print --backend "$b" --statements
    for want in '-- transport.claim' '-- channel.insert' '-- errors.upsert' \
        '-- errors.list_page' '-- operations.recent' "FROM ${prefix}operations"; do
        grep -qF -- "$want" "$tmp/out" || fail "$b statements lack $want"
    done
done
grep -qF 'SELECT TOP (CAST($1 AS int))' "$tmp/out" || fail "mssql operations.recent is not T-SQL"
expect_exit 2 sb schema verify --statements
ok "schema print --statements"

# T33: the printed DDL is the whole schema. Applied by the database's own
# client to a fresh prefix, the tables of the transport, the channel and
# the error store all exist, and verify passes.
ddl="${prefix}ddl_"
"$SQLBUS" --prefix "$ddl" schema print >"$tmp/ddl.sql" || fail "schema print"
if [ "$backend" = sqlite ]; then
    sqlite3 "${SQLBUS_DB#sqlite:}" <"$tmp/ddl.sql" || fail "sqlite3 refused the DDL"
    tables=$(sqlite3 "${SQLBUS_DB#sqlite:}" "SELECT name FROM sqlite_master WHERE type = 'table'")
else
    psql -q -v ON_ERROR_STOP=1 "$SQLBUS_DB" -f "$tmp/ddl.sql" >/dev/null || fail "psql refused the DDL"
    tables=$(psql -qAt "$SQLBUS_DB" -c "SELECT tablename FROM pg_tables")
fi
for t in messages counts channel_messages channel_subscribers recovery_state \
    failed_messages failed_message_groups group_comments known_endpoints \
    retry_claims group_operations message_edits redirects message_bodies \
    failed_imports failed_counts failed_message_history failed_message_attempts; do
    grep -qx "${ddl}$t" <<<"$tables" || fail "the printed DDL made no ${ddl}$t"
done
expect_exit 0 "$SQLBUS" --prefix "$ddl" schema verify
ok "schema print: the DDL, applied by hand, is the whole schema"

# T33 + T8: bad --backend or prefix.
expect_exit 2 sb schema print --backend oracle
expect_err "--backend must be sqlite, postgresql or mssql"
expect_exit 2 "$SQLBUS" schema print --backend sqlite --prefix '1bad'
expect_err "prefix"
ok "schema print input errors"

# T7 + T33: verify on an empty database: missing -> exit 3.
expect_exit 3 sb schema verify
ok "schema verify: missing schema exits 3"

# T6 + T33: migrate creates it; verify is then happy.
expect_exit 0 sb schema migrate
expect_exit 0 sb schema verify
grep -q 'schema ok' "$tmp/out" || fail "verify output: $(cat "$tmp/out")"
expect_exit 0 sb schema migrate
ok "schema migrate, then verify"

# T7: a table of the wrong shape: exit 3, naming the problem and the fix.
bad="${prefix}bad_"
if [ "$backend" = sqlite ]; then
    sqlite3 "${SQLBUS_DB#sqlite:}" "CREATE TABLE ${bad}messages (id TEXT PRIMARY KEY, queue TEXT NOT NULL, payload TEXT)"
else
    psql -q "$SQLBUS_DB" -c "CREATE TABLE ${bad}messages (id uuid PRIMARY KEY, queue text NOT NULL, payload text)"
fi
expect_exit 3 "$SQLBUS" --prefix "$bad" schema verify
grep -Eqi 'column|payload|headers' "$tmp/err" || fail "mismatch not explained: $(cat "$tmp/err")"
grep -Eqi 'alter|create|drop' "$tmp/err" || fail "no fix printed: $(cat "$tmp/err")"
if [ "$backend" = postgresql ]; then
    psql -q "$SQLBUS_DB" -c "DROP TABLE ${bad}messages" || true
fi
ok "schema verify: wrong shape exits 3 with the fix"

# issue 20.8, T7: a table sqlbus uses that lacks columns is a schema
# error (exit 3) naming the table, the column and the fix, found at open
# on every backend by every command, not the database's "no such column"
# from the first statement (or the index the migration builds) that
# names it.
m8="${prefix}m8_"
if [ "$backend" = sqlite ]; then
    # The issue's table: SQLite columns without a declared type.
    sql "CREATE TABLE ${m8}messages (id, queue)"
    says="table ${m8}messages: column payload is missing; fix: recreate"
else
    sql "CREATE TABLE ${m8}messages (id uuid, queue text)"
    says="table ${m8}messages: column payload is missing; fix: ALTER TABLE ${m8}messages ADD COLUMN payload bytea NOT NULL"
fi
printf 'x' >"$tmp/body"
for cmd in "publish --queue q $tmp/body" "work --queue q --once -- true" \
    queues "errors list" "schema migrate" "schema verify"; do
    # shellcheck disable=SC2086 # the words of $cmd are its arguments
    expect_exit 3 "$SQLBUS" --prefix "$m8" $cmd
    expect_err "$says"
done
expect_exit 3 timeout 60 "$SQLBUS" --prefix "$m8" serve --listen 127.0.0.1:0
expect_err "$says"
ok "a messages table lacking columns exits 3 for every command"

# The same for the other tables: the transport's counts, the channel's,
# the error store's.
c8="${prefix}c8_"
sql "CREATE TABLE ${c8}counts (queue text PRIMARY KEY)"
expect_exit 3 "$SQLBUS" --prefix "$c8" queues
expect_err "table ${c8}counts: column published is missing; fix: "
r8="${prefix}r8_"
sql "CREATE TABLE ${r8}recovery_state (correlation_id text, registration_id text)"
expect_exit 3 "$SQLBUS" --prefix "$r8" wait --correlation-id c1 --timeout 1s
expect_err "table ${r8}recovery_state: column handler is missing; fix: "
e8="${prefix}e8_"
sql "CREATE TABLE ${e8}known_endpoints (id text PRIMARY KEY)"
expect_exit 3 "$SQLBUS" --prefix "$e8" errors list
expect_err "table ${e8}known_endpoints: column name is missing; fix: "
ok "counts, channel and error store tables lacking columns exit 3"
