/* help.c - the --help text of the program and of every subcommand
 * (docs/cli.md has the long form). */
#include "cli.h"

#define GLOBALS                                                                \
    "Global options (before or after the command):\n"                          \
    "  --db URL        database (default: $SQLBUS_DB, else "                   \
    "sqlite:./sqlbus.db)\n"                                                    \
    "  --prefix P      table prefix (default sqlbus_)\n"                       \
    "  -v, --verbose   more logging (repeat for debug)\n"                      \
    "  -q, --quiet     errors only; no progress or summary lines\n"            \
    "  -h, --help      this help\n"

const char cli_usage_main[] =
    "Usage: sqlbus [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]\n"
    "\n"
    "sqlbus turns SQLite or PostgreSQL into a durable message queue.\n"
    "\n" GLOBALS "  --version       print the version\n"
    "\n"
    "Exit codes: 0 ok, 1 runtime error, 2 usage error (request/wait: an\n"
    "error reply), 3 schema missing or wrong, 4 not found, 5 database\n"
    "unavailable, 6 conflict (e.g. a group operation already running),\n"
    "124 no reply in time (request/wait), 130 interrupted.\n";

const char cli_usage_publish[] =
    "Usage: sqlbus publish --queue Q [OPTIONS] [FILE|-]\n"
    "\n"
    "Publish the contents of FILE (or stdin) as one message, or each line\n"
    "as a message with --lines. Prints the id of each published message.\n"
    "\n"
    "  --queue Q        queue to publish to (required; 1-200 bytes UTF-8)\n"
    "  --id ID          message id (a UUID); publishing an id that exists\n"
    "                   again changes nothing (default: a new UUIDv7)\n"
    "  --delay D        not deliverable before D from now (e.g. 10s, 5m;\n"
    "                   default 0)\n"
    "  --priority N     claimed before lower priorities of the queue,\n"
    "                   -32768..32767 (default 0)\n"
    "  --expires-in D   dead-letter it (reason \"expired\") if no handler\n"
    "                   has started it D after the publish; longer than\n"
    "                   --delay, at most 100 years (default: never)\n"
    "  --unique-key K   refused (exit 6, naming the message that holds it)\n"
    "                   while a message of the queue holds K, 1..255 bytes\n"
    "  --unique-policy P  when K is held: active (default) while a message\n"
    "                   with it waits or runs, queued while one waits,\n"
    "                   window as active and for --unique-window D after\n"
    "                   one was published\n"
    "  --unique-window D  the window of --unique-policy window\n"
    "  --header K=V     add a header; repeat for more\n"
    "  --lines          one message per line (newline removed), committed\n"
    "                   in batches of 1000\n"
    "  --json           print the ids as a JSON array\n"
    "\n" GLOBALS;

const char cli_usage_work[] =
    "Usage: sqlbus work --queue Q [OPTIONS] -- CMD [ARGS...]\n"
    "\n"
    "Run CMD once per message: payload on stdin; SQLBUS_MESSAGE_ID,\n"
    "SQLBUS_QUEUE, SQLBUS_ATTEMPT, SQLBUS_CORRELATION_ID (if any) and\n"
    "SQLBUS_HEADERS (JSON) in its environment. Exit 0 acks the message;\n"
    "a non-zero exit, a signal or the timeout fails it (exit:N, signal:NAME,\n"
    "timeout, with the last 8 KiB of stderr; or, when stderr ends with an\n"
    "uncaught Python, Java, .NET, Go or Node.js exception, that exception\n"
    "and its stack trace) and it is retried after the back-off\n"
    "(--delay, --backoff), or dead-lettered once --max-attempts are spent.\n"
    "Messages may run more than once: make CMD idempotent (key on\n"
    "SQLBUS_MESSAGE_ID).\n"
    "\n"
    "  --queue Q            queue to consume (required)\n"
    "  --concurrency N      commands running at once, 1..256 (default 1)\n"
    "  --max-attempts N     deliveries before dead-lettering; 0 = unlimited\n"
    "                       (default 5)\n"
    "  --timeout D          kill CMD after D (SIGTERM, SIGKILL 2s later;\n"
    "                       default 30s)\n"
    "  --lease D            lease per delivery, renewed every third while\n"
    "                       CMD runs, 1s..24h (default 30s)\n"
    "  --delay D            wait D before retrying a failed message, every\n"
    "                       time (default 5s); the same as --backoff fixed\n"
    "                       --backoff-base D\n"
    "  --backoff MODE       fixed (default): wait --backoff-base every time;\n"
    "                       exponential: wait base x factor^(attempt-1), at\n"
    "                       most --backoff-max, drawn at random between\n"
    "                       half of that and all of it (jitter)\n"
    "  --backoff-base D     first retry delay, 0..7d (default 5s fixed,\n"
    "                       1s exponential, which needs at least 1ms)\n"
    "  --backoff-max D      cap of the exponential delay, 1ms..7d, not\n"
    "                       below the base (default 5m)\n"
    "  --backoff-factor F   growth per attempt, 1.1..10 (default 2)\n"
    "  --once               exit 0 once no message is ready or leased\n"
    "  --endpoint NAME      processing endpoint of its failures, 1..200\n"
    "                       bytes (default: the queue name)\n"
    "  --prefetch N         messages claimed ahead of the commands, leased\n"
    "                       and renewed while they wait; 0 = claim only for\n"
    "                       idle slots (fair between workers), up to 10000\n"
    "                       (default 4000, at most 100 ms of work)\n"
    "  --heartbeat D|off    how often the endpoint's liveness is written,\n"
    "                       100ms..1h (default 10s; dead after 4 missed\n"
    "                       beats, at once after a graceful stop); off:\n"
    "                       never\n"
    "\n"
    "A message published by 'sqlbus request' (header sb-reply-to) is\n"
    "answered: CMD's stdout is the reply when it exits 0; after the last\n"
    "failed attempt an error reply (exit:N, signal:NAME or timeout, with the\n"
    "stderr tail) is sent instead.\n"
    "\n"
    "SIGINT/SIGTERM stop gracefully: no new messages, running commands\n"
    "finish; a second signal kills them.\n"
    "\n" GLOBALS;

const char cli_usage_queues[] =
    "Usage: sqlbus queues [--json]\n"
    "       sqlbus queues pause QUEUE\n"
    "       sqlbus queues resume QUEUE\n"
    "       sqlbus queues cancel QUEUE ID...\n"
    "       sqlbus queues cancel QUEUE --key KEY\n"
    "       sqlbus queues limit QUEUE [--max-running N|off] [--rate N/D|off]\n"
    "       sqlbus queues ttl QUEUE D|off\n"
    "       sqlbus queues expire\n"
    "\n"
    "List every queue: ready, delayed, in-flight and dead-lettered counts,\n"
    "the age of the oldest ready message, whether it is paused, its time\n"
    "to live and its limits.\n"
    "\n"
    "pause stops every worker of QUEUE, on any host, from claiming within\n"
    "a second; messages being handled finish; publishes are still\n"
    "accepted. resume lets them claim again.\n"
    "\n"
    "cancel dead-letters each message ID of QUEUE at once with reason\n"
    "\"cancelled\", waiting, delayed or running; a handler running it sees\n"
    "the cancel at its next lease renewal and its ack is refused. Exits 4\n"
    "when an ID is not in QUEUE (settled already), after the others.\n"
    "--key cancels every message of QUEUE holding unique key KEY (exit 4\n"
    "when none does).\n"
    "\n"
    "limit caps QUEUE for every worker on any host: --max-running N (1 to\n"
    "10000) messages handled at once, --rate N/D at most N claims (1 to\n"
    "1000000) per duration D (1ms to 1d), e.g. 100/1s or 5/1m; off\n"
    "removes one. A limit not named keeps its value. Workers see a change\n"
    "within a second; a limited queue's workers claim only for their idle\n"
    "handlers (no prefetch).\n"
    "\n"
    "ttl gives QUEUE a time to live, 1ms to 100 years (off: none): a\n"
    "message no handler has started D after its publish is dead-lettered\n"
    "with reason \"expired\" by the claim that finds it, by 'sqlbus serve'\n"
    "(every second) or by 'queues expire' (one sweep of every queue).\n"
    "\n"
    "  --json           print a JSON array of objects\n"
    "\n" GLOBALS;

const char cli_usage_schedule[] =
    "Usage: sqlbus schedule add NAME (--cron EXPR | --every D) --queue QUEUE\n"
    "                           [--tz ZONE] [--missed skip|once]\n"
    "                           [--payload TEXT | FILE] [--header K=V]...\n"
    "       sqlbus schedule list [--json]\n"
    "       sqlbus schedule remove NAME\n"
    "       sqlbus schedule run [--once]\n"
    "\n"
    "Periodic jobs (T41): a schedule publishes a message to QUEUE at every\n"
    "occurrence of a cron expression or interval, from its first occurrence\n"
    "after it was added. Any number of schedulers (`schedule run`, `serve`)\n"
    "may run, on any host: each occurrence is published exactly once.\n"
    "\n"
    "add saves schedule NAME (1 to 200 bytes), replacing one of that name:\n"
    "  --cron EXPR      5 fields: minute hour day-of-month month day-of-week\n"
    "                   (Vixie cron; also @hourly @daily @weekly @monthly\n"
    "                   @yearly); at most 256 bytes\n"
    "  --every D        a fixed interval, 1s to 366d (UTC durations)\n"
    "  --queue QUEUE    where the messages go\n"
    "  --tz ZONE        the zone --cron is read in (Europe/Berlin; default\n"
    "                   UTC), from the system's tz database\n"
    "  --missed POLICY  occurrences more than 60s late (nothing ran them):\n"
    "                   skip (default) drops them; once publishes one\n"
    "                   message for all of them\n"
    "  --payload TEXT   each message's payload (or read FILE, - for stdin;\n"
    "                   default empty)\n"
    "  --header K=V     a header of each message (repeatable)\n"
    "list prints each schedule and its next occurrence (--json: an array).\n"
    "remove deletes schedule NAME; exits 4 when there is none.\n"
    "run publishes due occurrences until SIGINT or SIGTERM (--once: one\n"
    "pass, then exit).\n"
    "\n"
    "  --json           print a JSON array of objects\n"
    "  --once           one pass of the scheduler\n"
    "\n" GLOBALS;

const char cli_usage_serve[] =
    "Usage: sqlbus serve [--listen HOST:PORT] [--token-file FILE]\n"
    "                    [--error-retention D] [--request-timeout D]\n"
    "                    [--ingesters N] [--max-connections N]\n"
    "                    [--max-connections-per-ip N] [--header-timeout D]\n"
    "                    [--cors-origin ORIGIN]... [--allowed-host NAME]...\n"
    "                    [--check-interval D] [--allow-edit] [--demo]\n"
    "\n"
    "Ingest the dead-letter queue into the error store, run housekeeping\n"
    "(retention, dead-letter pruning, the recovery watchdog) and the\n"
    "operations the API accepts, and serve the HTTP API (docs/http-api.md),\n"
    "the dashboard at / and /metrics until SIGINT or SIGTERM.\n"
    "The database is --db, SQLBUS_DB or sqlite:./sqlbus.db; the URL to\n"
    "open is printed on stderr.\n"
    "\n"
    "  --allow-edit        allow edit-and-retry of failed messages\n"
    "                      (POST /api/edit/{id}; off by default)\n"
    "  --allowed-host NAME with no token, serve answers requests for\n"
    "                      loopback names only (localhost, 127.0.0.1,\n"
    "                      [::1]), against DNS rebinding; NAME is\n"
    "                      answered too (a proxy's Host); repeatable (16)\n"
    "  --check-interval D  how often sqlbus's own health checks are\n"
    "                      evaluated for the e-mail notifications set with\n"
    "                      POST /api/notifications/email (30s; 1s to 1h)\n"
    "  --cors-origin ORIGIN\n"
    "                      a page of ORIGIN (http(s)://HOST[:PORT]) may\n"
    "                      call the API from the browser, with\n"
    "                      credentials; repeatable (16). \"*\": any page\n"
    "                      may read, this machine's pages change (the\n"
    "                      default on loopback with no token);\n"
    "                      \"none\": only the server's own pages (the\n"
    "                      default with tokens)\n"
    "  --demo              also run a small web-shop workload in the same\n"
    "                      database (demo.* queues, failing handlers,\n"
    "                      dead letters, request/reply with progress), so\n"
    "                      every screen has something to show. It writes\n"
    "                      into the database: use a throwaway one\n"
    "  --error-retention D resolved and archived failed messages are\n"
    "                      deleted D after their status changed (15d;\n"
    "                      1h to 365d)\n"
    "  --header-timeout D  a connection that has not sent a whole request\n"
    "                      head D after it opened, or after its last\n"
    "                      answer, is closed (10s; 100ms to 1h)\n"
    "  --ingesters N       ingestion passes at once, 1 to 8 (PostgreSQL 2,\n"
    "                      SQLite 1): on PostgreSQL each keeps one\n"
    "                      database core busy under a backlog\n"
    "  --listen HOST:PORT  address to listen on (127.0.0.1:8080; port 0\n"
    "                      takes a free one). Any address but loopback\n"
    "                      needs an admin token\n"
    "  --max-connections N connections at once (256; 2 to 10000); beyond,\n"
    "                      new ones wait to be accepted\n"
    "  --max-connections-per-ip N\n"
    "                      connections at once from one address (32; 1 to\n"
    "                      10000); beyond, new ones are closed at once\n"
    "  --request-timeout D each SQL statement of an API request is\n"
    "                      cancelled after D (10s; 10ms to 1h): the\n"
    "                      request answers 503 \"timeout\" with\n"
    "                      Retry-After. Ingestion, housekeeping, the\n"
    "                      operations and the demo have no limit\n"
    "  --token-file FILE   lines admin:TOKEN and read:TOKEN; requests then\n"
    "                      need Authorization: Bearer TOKEN (read: GET and\n"
    "                      HEAD only). SQLBUS_TOKEN sets the admin token too\n"
    "\n" GLOBALS;

const char cli_usage_dlq[] =
    "Usage: sqlbus dlq list|show|requeue|purge [OPTIONS]\n"
    "\n"
    "  list     list dead-lettered messages\n"
    "  show ID  show one dead-lettered message in full\n"
    "  requeue  put dead-lettered messages back on their original queue\n"
    "  purge    delete dead-lettered messages\n"
    "\n"
    "Run 'sqlbus dlq COMMAND --help' for its options.\n";

const char cli_usage_dlq_list[] =
    "Usage: sqlbus dlq list [--queue Q] [--older-than D] [--limit N] "
    "[--json]\n"
    "\n"
    "  --queue Q        only messages that failed on queue Q\n"
    "  --older-than D   only messages dead-lettered more than D ago\n"
    "  --limit N        at most N messages, 1..1000000 (default 100)\n"
    "  --json           print a JSON array\n"
    "\n" GLOBALS;

const char cli_usage_dlq_show[] =
    "Usage: sqlbus dlq show ID [--json]\n"
    "\n"
    "Show one dead-lettered message: its failure, headers and payload\n"
    "(raw when it is UTF-8 text, else a hex dump; base64 in JSON).\n"
    "Exit 4 when there is no dead letter with that id.\n"
    "\n"
    "  --json           print a JSON object\n"
    "\n" GLOBALS;

const char cli_usage_dlq_requeue[] =
    "Usage: sqlbus dlq requeue (--queue Q | --older-than D | --id ID | "
    "--all)...\n"
    "\n"
    "Re-publish matching dead letters to the queue they failed on, with\n"
    "their attempts reset, each in one transaction with its removal from\n"
    "the dead-letter queue. Prints the count.\n"
    "\n"
    "  --queue Q        only messages that failed on queue Q\n"
    "  --older-than D   only messages dead-lettered more than D ago\n"
    "  --id ID          only the dead letter with this id\n"
    "  --all            every dead letter (required when no filter is "
    "given)\n"
    "\n" GLOBALS;

const char cli_usage_dlq_purge[] =
    "Usage: sqlbus dlq purge (--queue Q | --older-than D | --id ID | "
    "--all)...\n"
    "\n"
    "Delete matching dead letters for good. Prints the count.\n"
    "\n"
    "  --queue Q        only messages that failed on queue Q\n"
    "  --older-than D   only messages dead-lettered more than D ago\n"
    "  --id ID          only the dead letter with this id\n"
    "  --all            every dead letter (required when no filter is "
    "given)\n"
    "\n" GLOBALS;

const char cli_usage_schema[] =
    "Usage: sqlbus schema print [--backend sqlite|postgresql|mssql]\n"
    "                           [--prefix P] [--statements]\n"
    "       sqlbus schema verify\n"
    "       sqlbus schema migrate\n"
    "\n"
    "  print    print the DDL (backend: --backend, else the one --db names);\n"
    "           with --statements every statement text sqlbus can send on\n"
    "           that backend instead, each under a -- name line\n"
    "  verify   check the tables against the catalog; exit 3 on a missing\n"
    "           or wrong table, with the statement that fixes it\n"
    "  migrate  create what is missing (under a cross-process lock), then\n"
    "           verify\n"
    "\n" GLOBALS;

const char cli_usage_request[] =
    "Usage: sqlbus request --queue Q [--timeout D]\n"
    "                      [--until EXPR | --until-prefix S] [FILE|-]\n"
    "\n"
    "Publish the contents of FILE (or stdin) as a job with a fresh\n"
    "correlation id and wait for its reply (answered by 'sqlbus work' or\n"
    "a worker). The reply is printed to stdout byte for byte (exit 0). An\n"
    "error reply prints TYPE: MESSAGE (and its detail) to stderr, exit 2;\n"
    "no reply within the timeout exits 124.\n"
    "\n"
    "  --queue Q          queue to publish the job to (required)\n"
    "  --timeout D        how long to wait, 1ms..7d (default 30s)\n"
    "  --until EXPR       only a JSON reply matching EXPR ends the wait:\n"
    "                     PATH (has a string or integer there), PATH=VALUE\n"
    "                     or PATH!=VALUE (compared as text); PATH is like\n"
    "                     $.status or data.items[0].state, names matched\n"
    "                     case-insensitively. Other replies are progress,\n"
    "                     printed to stderr\n"
    "  --until-prefix S   only a reply starting with S ends the wait; the\n"
    "                     others are progress, printed to stderr\n"
    "\n" GLOBALS;

const char cli_usage_respond[] =
    "Usage: sqlbus respond --correlation-id ID [--reply-id UUID]\n"
    "                      [--error TYPE:MESSAGE] [FILE|-]\n"
    "\n"
    "Send the contents of FILE (or stdin) as the reply to ID; with --error,\n"
    "an error reply (the input, if any, is its detail). Returns once the\n"
    "reply was delivered, confirmed or handed to recovery.\n"
    "\n"
    "  --correlation-id ID   the id to answer (required; 1-400 bytes UTF-8)\n"
    "  --reply-id UUID       makes a retried respond a no-op\n"
    "  --error TYPE:MESSAGE  send an error reply (split at the first ':')\n"
    "\n" GLOBALS;

const char cli_usage_wait[] =
    "Usage: sqlbus wait --correlation-id ID [--timeout D]\n"
    "                   [--until EXPR | --until-prefix S]\n"
    "\n"
    "Attach to a correlation id created elsewhere and print its next reply\n"
    "(exit 0); an error reply exits 2, no reply within the timeout 124.\n"
    "Only replies sent after the wait started are seen.\n"
    "\n"
    "  --correlation-id ID   the id to wait on (required)\n"
    "  --timeout D           how long to wait, 1ms..7d (default 30s)\n"
    "  --until EXPR          only a JSON reply matching EXPR (PATH,\n"
    "                        PATH=VALUE or PATH!=VALUE) ends the wait; see\n"
    "                        'sqlbus help request'\n"
    "  --until-prefix S      only a reply starting with S ends the wait\n"
    "\n" GLOBALS;

const char cli_usage_recovery[] =
    "Usage: sqlbus recovery list|watchdog [OPTIONS]\n"
    "\n"
    "  list      list recovery registrations with their state\n"
    "  watchdog  count the stale registrations and log them\n"
    "\n"
    "Run 'sqlbus recovery COMMAND --help' for its options.\n";

const char cli_usage_recovery_list[] =
    "Usage: sqlbus recovery list [--state S] [--stale-after D] [--limit N] "
    "[--json]\n"
    "\n"
    "List the recovery registrations of waiters, oldest first, with their\n"
    "state, and a summary of the counts on stderr:\n"
    "  outstanding  a live waiter (its process keeps it alive)\n"
    "  dispatched   no live waiter; a reply was handed to recovery and no\n"
    "               callback has completed it yet\n"
    "  stale        no live waiter, nothing dispatched, older than\n"
    "               --stale-after\n"
    "  orphaned     no live waiter, nothing dispatched, younger\n"
    "\n"
    "  --state S        only these states (comma-separated), or all\n"
    "                   (default all)\n"
    "  --stale-after D  age that makes a registration stale, 1ms..3650d\n"
    "                   (default 24h)\n"
    "  --limit N        at most N registrations, 1..10000 (default 1000)\n"
    "  --json           print a JSON array of objects\n"
    "\n" GLOBALS;

const char cli_usage_recovery_watchdog[] =
    "Usage: sqlbus recovery watchdog [--stale-after D]\n"
    "\n"
    "Count the stale registrations - older than D, with no live waiter and\n"
    "no reply dispatched - print \"N stale registrations\" and log the\n"
    "oldest 100 as warnings on stderr. Exits 0 whatever the count.\n"
    "\n"
    "  --stale-after D  1ms..3650d (default 24h)\n"
    "\n" GLOBALS;

const char cli_usage_errors[] =
    "Usage: sqlbus errors COMMAND [OPTIONS]\n"
    "\n"
    "The error store: failed messages ingested from the dead-letter queue.\n"
    "\n"
    "  ingest     move the dead-letter queue into the store (--follow: keep\n"
    "             going until SIGINT/SIGTERM)\n"
    "  list       failed messages, filtered, sorted and paged\n"
    "  show ID    one failed message with its groups\n"
    "  body ID    the stored body of a message, raw, on stdout\n"
    "  groups     failure groups with counts and operations; comments\n"
    "  search     full-text search over types, headers and bodies\n"
    "  retry      send messages back to their queues (--pending: again)\n"
    "  archive    archive unresolved messages\n"
    "  unarchive  make archived messages unresolved again\n"
    "  resolve    mark pending retries resolved by hand\n"
    "  edit ID    send an edited copy and resolve the original\n"
    "  redirect   send the retries of one queue to another\n"
    "  import     put failed messages from a JSON-lines file into the\n"
    "             dead-letter queue\n"
    "  reimport   send failed imports back through ingestion\n"
    "\n"
    "Run 'sqlbus errors COMMAND --help' for its options.\n";

const char cli_usage_errors_ingest[] =
    "Usage: sqlbus errors ingest [--follow [--interval D]] [--json]\n"
    "\n"
    "Ingest the dead-letter queue into the error store until it is empty:\n"
    "each batch is written and removed from the queue in one transaction.\n"
    "Rows that cannot become a failed message are kept as failed imports\n"
    "with the reason ('sqlbus errors reimport' retries them).\n"
    "\n"
    "  --follow      keep ingesting until SIGINT/SIGTERM (then exit 0),\n"
    "                printing a line per pass that did something\n"
    "  --interval D  pause between passes with --follow, 10ms..1h\n"
    "                (default 1s)\n"
    "  --json        print the counts as a JSON object (a JSON line per\n"
    "                pass with --follow)\n"
    "\n" GLOBALS;

const char cli_usage_errors_show[] =
    "Usage: sqlbus errors show UNIQUE-ID [--json]\n"
    "\n"
    "Print one failed message: status, attempts, where and why it failed,\n"
    "its groups and the size of its body. Exit 4 if there is no such\n"
    "message. 'sqlbus errors body' prints the body itself.\n"
    "\n"
    "  --json  print a JSON object (with the headers)\n"
    "\n" GLOBALS;

const char cli_usage_errors_list[] =
    "Usage: sqlbus errors list [--status S] [--queue Q] [--endpoint E]\n"
    "                          [--group ID] [--type T] [--sort KEY] [--asc]\n"
    "                          [--page N] [--per-page N] [--json]\n"
    "\n"
    "List failed messages, newest failure first, one page at a time.\n"
    "\n"
    "  --status S      unresolved (default), retry_issued, resolved,\n"
    "                  archived or any\n"
    "  --queue Q       only messages that failed on queue Q\n"
    "  --endpoint E    only messages of processing endpoint E\n"
    "  --group ID      only messages of this failure group\n"
    "  --type T        only messages of this message type\n"
    "  --sort KEY      time_of_failure (default), message_type,\n"
    "                  failed_queue, attempts or status_changed\n"
    "  --asc           oldest / smallest first\n"
    "  --page N        page number, 1..1000000 (default 1)\n"
    "  --per-page N    messages per page, 1..500 (default 50)\n"
    "  --json          print {\"total\", \"page\", \"per_page\", \"items\"}\n"
    "\n" GLOBALS;

const char cli_usage_errors_search[] =
    "Usage: sqlbus errors search WORDS... [--limit N] [--json]\n"
    "\n"
    "Full-text search over message types, headers and body text. The words\n"
    "are ORed; '.' and '+' break words, so Order finds Shop.Order. Best\n"
    "matches first.\n"
    "\n"
    "  --limit N   at most N messages, 1..1000 (default 50)\n"
    "  --json      print a JSON array\n"
    "\n" GLOBALS;

const char cli_usage_errors_body[] =
    "Usage: sqlbus errors body UNIQUE-ID\n"
    "\n"
    "Write the stored body of a failed message to stdout byte for byte\n"
    "(binary-safe; from the body store when it is kept there). Exit 4 if\n"
    "there is no such message.\n"
    "\n" GLOBALS;

const char cli_usage_errors_groups[] =
    "Usage: sqlbus errors groups [--classifier NAME] [--archived] [--json]\n"
    "       sqlbus errors groups comment GROUP-ID TEXT\n"
    "       sqlbus errors groups comment GROUP-ID --delete\n"
    "\n"
    "List the failure groups of one classifier, latest failure first (at\n"
    "most 200): id, message count, failure window, the latest retry,\n"
    "archive or unarchive of the whole group (kind, state, done/total) and\n"
    "the comment. 'comment' sets (at most 1000 bytes) or deletes a group's\n"
    "comment.\n"
    "\n"
    "  --classifier NAME  Exception Type and Stack Trace (default), Message\n"
    "                     Type, Endpoint Address, Endpoint Instance or\n"
    "                     Endpoint Name\n"
    "  --archived         groups of archived messages instead of unresolved\n"
    "  --json             print a JSON array\n"
    "  --delete           (comment) delete the comment\n"
    "\n" GLOBALS;

#define SELECTION                                                               \
    "Select exactly one of:\n"                                                  \
    "  UNIQUE-ID...    these messages\n"                                        \
    "  --group ID      every message of a failure group (one retry, archive\n"  \
    "                  or unarchive per group at a time: another one running\n" \
    "                  exits 6; an interrupted one is resumed by running the\n" \
    "                  same command again)\n"                                   \
    "  --queue Q       every message that failed on queue Q\n"                  \
    "  --endpoint E    every message of processing endpoint E\n"                \
    "  --all           every message in the status the command acts on\n"       \
    "optionally narrowed by the time each message last changed (a range\n"      \
    "alone means --all within it):\n"                                           \
    "  --from TIME     last modified at or after TIME\n"                        \
    "  --to TIME       last modified at or before TIME\n"                       \
    "TIME is ISO 8601 with a zone (2026-01-02T03:04:05Z, 2026-01-02) or\n"      \
    "Unix seconds. Prints the count changed ('--json': {\"changed\": N}); a\n"  \
    "progress bar on a terminal. Runs in transactions of 1,000 messages.\n"     \
    "\n"                                                                        \
    "  --json          print {\"changed\": N}\n"

const char cli_usage_errors_retry[] =
    "Usage: sqlbus errors retry SELECTION [--pending] [--json]\n"
    "\n"
    "Send unresolved messages back to the queue they failed on (or its\n"
    "redirect), body and headers as stored, marked retry_issued; a message\n"
    "already in an outstanding retry is skipped. With --pending, retry\n"
    "messages whose retry is still pending (retry_issued) once more.\n"
    "\n" SELECTION "  --pending       act on pending retries (retry_issued)\n"
    "\n" GLOBALS;

const char cli_usage_errors_archive[] =
    "Usage: sqlbus errors archive SELECTION [--json]\n"
    "\n"
    "Archive unresolved messages (they expire with the retention period).\n"
    "\n" SELECTION "\n" GLOBALS;

const char cli_usage_errors_unarchive[] =
    "Usage: sqlbus errors unarchive SELECTION [--json]\n"
    "\n"
    "Make archived messages unresolved again.\n"
    "\n" SELECTION "\n" GLOBALS;

const char cli_usage_errors_resolve[] =
    "Usage: sqlbus errors resolve SELECTION [--json]\n"
    "\n"
    "Mark pending retries (retry_issued) resolved by hand and drop their\n"
    "retry claims.\n"
    "\n" SELECTION "\n" GLOBALS;

const char cli_usage_errors_edit[] =
    "Usage: sqlbus errors edit UNIQUE-ID --allow-edit [--body TEXT |\n"
    "                          --body-file FILE] [--header K=V]...\n"
    "                          [--remove-header K]... [--headers-json FILE]\n"
    "                          [--json]\n"
    "\n"
    "Send an edited copy of an unresolved message (new message id, header\n"
    "sb-edit-of = the unique id) to its queue (or its redirect) and mark\n"
    "the original resolved, in one transaction. The copy starts from the\n"
    "stored headers (or the --headers-json object) and body; the failure\n"
    "headers are dropped. Identity, correlation and failure headers are\n"
    "locked: changing one is refused (exit 2). A second edit of the same\n"
    "message is ignored. Prints the copy's message id.\n"
    "\n"
    "  --allow-edit       required (or SQLBUS_ALLOW_EDIT=1): edits are off\n"
    "                     by default\n"
    "  --body TEXT        the new body\n"
    "  --body-file FILE   the new body from FILE (- for stdin)\n"
    "  --header K=V       set a header; repeat for more (up to 64)\n"
    "  --remove-header K  drop a header; repeat for more\n"
    "  --headers-json F   start from this JSON object of strings instead of\n"
    "                     the stored headers\n"
    "  --json             print {\"ignored\": BOOL, \"message_id\": ID}\n"
    "\n" GLOBALS;

const char cli_usage_errors_redirect[] =
    "Usage: sqlbus errors redirect add FROM-QUEUE TO-QUEUE [--json]\n"
    "       sqlbus errors redirect update ID TO-QUEUE\n"
    "       sqlbus errors redirect remove ID\n"
    "       sqlbus errors redirect list [--json]\n"
    "\n"
    "Retries and edits of messages that failed on FROM-QUEUE go to\n"
    "TO-QUEUE. No chains: a queue already redirected elsewhere, or a target\n"
    "that is itself redirected, is refused (exit 6). 'add' prints the\n"
    "redirect's id; adding the same redirect again changes nothing.\n"
    "\n"
    "  --json  print the redirect (add) or a JSON array (list)\n"
    "\n" GLOBALS;

const char cli_usage_errors_import[] =
    "Usage: sqlbus errors import FILE.jsonl|- [--ingest] [--json]\n"
    "\n"
    "Put failed messages into the dead-letter queue, one JSON object per\n"
    "line: {\"headers\": {...strings...}, \"body\": \"text\"} or with\n"
    "\"body_base64\" instead of \"body\". The headers must say where the\n"
    "message failed (sb-failed-queue, or NServiceBus fault headers such as\n"
    "NServiceBus.FailedQ). The whole file is checked first: the first bad\n"
    "line is reported as 'line N: FIELD: MESSAGE', nothing is imported and\n"
    "the exit code is 2. Then it is written in transactions of 1,000, with\n"
    "a progress bar on a terminal. Blank lines are skipped.\n"
    "\n"
    "  --ingest  run one ingestion pass afterwards (else the next\n"
    "            'sqlbus errors ingest' stores them)\n"
    "  --json    print {\"imported\": N} (and \"ingest\" counts)\n"
    "\n" GLOBALS;

const char cli_usage_errors_reimport[] =
    "Usage: sqlbus errors reimport [--ingest] [--json]\n"
    "\n"
    "Send every failed import (a dead-letter row ingestion could not use)\n"
    "back to the dead-letter queue with its headers and body, in\n"
    "transactions of 1,000, and print how many moved. Rows still unusable\n"
    "come back as failed imports with their reason on the next pass.\n"
    "\n"
    "  --ingest  run one ingestion pass afterwards\n"
    "  --json    print {\"moved\": N, \"failed_imports\": LEFT} (and\n"
    "            \"ingest\" counts)\n"
    "\n" GLOBALS;
