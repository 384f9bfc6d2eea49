/* ingest.c - the write path (E1, E3, E8-E11): one transaction per batch
 * claims and deletes dead-letter rows, keeps the unmappable ones in
 * failed_imports, folds the rest, keeps the keys of their attempts and
 * leaves out the attempts stored before, upserts the new ones with the
 * guards of E10, replaces the groups (and external bodies) of messages
 * whose newest attempt is this batch's, records endpoints
 * insert-if-absent, and resolves confirmed retries last. */
#include "errors/body.h"
#include "errors/classify.h"
#include "errors/errors.h"
#include "errors/ids.h"

#include <stdint.h>
#include <string.h>

#define LEASE_MS 60000 /* the claim deletes the rows; no lease is held */
#define JSON_MAX ((size_t)256 << 20)

typedef struct batch {
    sb_errors *e;
    sb_conn *c;
    sb_msg **rows;
    size_t n_rows;
    sb_attempt *attempts;
    const sb_attempt **failures;
    size_t n_failures;
    sb_folded *folded;
    long n_folded;
    int *won; /* per folded row: this batch's attempt is the stored one */
    sb_body_place *place; /* per folded row: where its body goes (E7) */
    unsigned char *fresh; /* per attempt key (the rows' times are one
                             array from folded[0].times): new */
    sb_buf json;
    sb_ingest_stats got;
} batch;

static void batch_free(batch *x)
{
    for (size_t i = 0; x->attempts != NULL && i < x->n_rows; i++)
        sb__attempt_clear(&x->attempts[i]);
    sb__free(x->attempts);
    sb__free(x->failures);
    sb__free(x->folded);
    sb__free(x->won);
    sb__free(x->place);
    sb__free(x->fresh);
    sb_msg_free_array(x->rows, x->n_rows);
    sb__buf_free(&x->json);
    sb_errors *e = x->e;
    memset(x, 0, sizeof *x);
    x->e = e;
    sb__buf_init(&x->json, JSON_MAX);
}

static int64_t now_us(const sb_errors *e)
{
    return sb__bus_now_us(e->bus);
}

/* Run a JSON-array statement over the batch's buffer. */
static int run_json(batch *x, int k, sb_rows **rows, sb_error *err)
{
    if (x->json.failed)
        return sb__err(err, x->json.failed, NULL,
                       "a batch statement does not fit in memory");
    sb_value p[2] = {sb__v_text(x->json.data), sb__v_int(now_us(x->e))};
    return sb__query(x->c, x->e->sql.s[k], p, 2, rows, NULL, err);
}

/* Whether the write path binds its rows (SQLite, PostgreSQL), or sends
 * them as JSON (SQL Server). */
static int bound(const batch *x)
{
    return x->e->bus->dialect != SB_DIALECT_MSSQL;
}

/* The statement of row set `kind` for 2^j rows, built at its first use. */
static int row_set_sql(sb_errors *e, int kind, int j, const char **sql,
                       sb_error *err)
{
    pthread_mutex_lock(&e->rows_mu);
    int rc = SB_OK;
    if (e->rows[kind][j] == NULL)
        rc = sb__errors_rows_sql(e->bus->dialect, e->bus->prefix, kind,
                                 (size_t)1 << j, &e->rows[kind][j]);
    *sql = e->rows[kind][j];
    pthread_mutex_unlock(&e->rows_mu);
    return rc == SB_OK ? SB_OK : sb__err(err, rc, NULL, "out of memory");
}

/* E10, E11 on SQLite and PostgreSQL: the row set `kind` of `n` rows of
 * `width` values each, bound as parameters (errors.h,
 * SB_ERRORS_ROWS_LOG): one statement of the next power of two rows,
 * the rest bound NULL (sql.c drops them), or statements of the most
 * rows the driver's parameter cap allows (2,100 through ODBC) until the
 * rest fits one; the rows in their order (the lock order). `got`, if
 * any, sees each statement's returned rows. SQLite's upsert binds the
 * clock first (`clock`). */
static int run_rows(batch *x, int kind, const sb_value *vals, size_t width,
                    size_t n, int clock, void (*got)(batch *, const sb_rows *),
                    sb_error *err)
{
    size_t lead = clock ? 1 : 0;
    int top = SB_ERRORS_ROWS_LOG;
    while (top > 0 && lead + ((size_t)1 << top) * width > x->c->drv->max_params)
        top--;
    size_t most = (size_t)1 << top;
    sb_value *p = sb__calloc(lead + most * width, sizeof *p);
    if (p == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    if (clock)
        p[0] = sb__v_int(now_us(x->e));
    int rc = SB_OK;
    for (size_t at = 0; rc == SB_OK && at < n;) {
        size_t take = n - at < most ? n - at : most;
        int j = 0;
        while (((size_t)1 << j) < take)
            j++;
        size_t slots = ((size_t)1 << j) * width;
        memcpy(p + lead, vals + at * width, take * width * sizeof *p);
        for (size_t i = take * width; i < slots; i++)
            p[lead + i] = sb__v_null();
        const char *sql = NULL;
        rc = row_set_sql(x->e, kind, j, &sql, err);
        sb_rows *rows = NULL;
        if (rc == SB_OK)
            rc = sb__query(x->c, sql, p, lead + slots,
                           got != NULL ? &rows : NULL, NULL, err);
        if (rc == SB_OK && got != NULL)
            got(x, rows);
        sb__rows_free(rows);
        at += take;
    }
    sb__free(p);
    return rc;
}

static void json_key(sb_buf *b, const char *key, int comma)
{
    sb__buf_puts(b, comma ? ",\"" : "\"");
    sb__buf_puts(b, key);
    sb__buf_puts(b, "\":");
}

static void json_text(sb_buf *b, const char *key, const char *v, int comma)
{
    json_key(b, key, comma);
    if (v == NULL)
        sb__buf_puts(b, "null");
    else
        sb__buf_json_str(b, v);
}

static void json_int(sb_buf *b, const char *key, int64_t v)
{
    sb__buf_puts(b, ",\"");
    sb__buf_puts(b, key);
    sb__buf_puts(b, "\":");
    sb__buf_int(b, v);
}

/* SQL Server: a name column's value cut to its size on a UTF-8 boundary
 * (`cap` bytes are never more than `cap` UTF-16 units) and without
 * trailing spaces, which SQL Server's = would ignore (errors.h, SB_MS_*);
 * `cap` 0: the value as it is. */
static void json_name(sb_buf *b, const char *key, const char *v, size_t cap,
                      int comma)
{
    if (v == NULL || cap == 0) {
        json_text(b, key, v, comma);
        return;
    }
    size_t n = strlen(v);
    if (n > cap)
        n = sb__utf8_cut(v, cap);
    while (n > 0 && v[n - 1] == ' ')
        n--;
    json_key(b, key, comma);
    sb__buf_json_mem(b, v, n);
}

const char *sb__errors_unfit_id(int dialect, const char *unique_id)
{
    if (dialect != SB_DIALECT_MSSQL || unique_id == NULL)
        return NULL;
    size_t n = strlen(unique_id);
    if (n > SB_MS_ID_MAX)
        return "the unique id is longer than 400 bytes, the most SQL Server's "
               "store keeps (sb-retry-of or "
               "ServiceControl.Retry.UniqueMessageId is too long)";
    if (n > 0 && unique_id[n - 1] == ' ')
        return "the unique id ends with a space, which SQL Server cannot tell "
               "from the same id without it (sb-retry-of or "
               "ServiceControl.Retry.UniqueMessageId)";
    return NULL;
}

/* E3: a row that cannot become a failed message is kept with its reason,
 * in the transaction that removes it from the dead-letter queue. */
static int keep_failed_import(batch *x, const sb_msg *row, const char *why,
                              sb_error *err)
{
    size_t len = 0;
    const void *body = sb_msg_payload(row, &len);
    sb_value p[6] = {sb__v_text(sb_msg_id(row)),
                     sb__v_int(now_us(x->e)),
                     sb__v_text(sb_msg_id(row)),
                     sb__v_text(sb_msg_headers(row)),
                     sb__v_text(why),
                     sb__v_blob(body ? body : "", len)};
    x->got.failed_imports++;
    return sb__query(x->c, x->e->sql.s[ER_FAILED_IMPORT], p, 6, NULL, NULL,
                     err);
}

static int map_rows(batch *x, sb_error *err)
{
    x->attempts = sb__calloc(x->n_rows, sizeof *x->attempts);
    x->failures = sb__calloc(x->n_rows, sizeof *x->failures);
    if (x->attempts == NULL || x->failures == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    for (size_t i = 0; i < x->n_rows; i++) {
        sb_error why;
        int rc = sb__attempt_from_row(x->rows[i], &x->attempts[i], &why);
        const char *unfit = rc == SB_OK
                                ? sb__errors_unfit_id(x->e->bus->dialect,
                                                      x->attempts[i].unique_id)
                                : NULL;
        if (unfit != NULL) {
            sb__attempt_clear(&x->attempts[i]);
            rc = keep_failed_import(x, x->rows[i], unfit, err);
            if (rc != SB_OK)
                return rc;
            continue;
        }
        if (rc == SB_INVALID)
            rc = keep_failed_import(x, x->rows[i], why.message, err);
        else if (rc != SB_OK)
            return sb__err(err, rc, NULL, "%s", why.message);
        else if (!x->attempts[i].retry_confirmed)
            x->failures[x->n_failures++] = &x->attempts[i];
        if (rc != SB_OK)
            return rc;
    }
    return SB_OK;
}

/* E22: what search covers: the message type, the headers and the inline
 * body text. */
static void search_texts(const sb_attempt *a, const sb_body_place *pl,
                         const char *texts[3], size_t lens[3])
{
    texts[0] = a->message_type;
    texts[1] = sb_msg_headers(a->row);
    texts[2] = pl->inline_text ? sb_msg_payload(a->row, NULL) : NULL;
    lens[0] = texts[0] ? strlen(texts[0]) : 0;
    lens[1] = texts[1] ? strlen(texts[1]) : 0;
    lens[2] = pl->inline_len;
}

/* SQL Server's upsert row, one object of the JSON array (sql_mssql.c),
 * its names cut to their columns (json_name). */
static void row_json(const sb_folded *f, const sb_body_place *pl, sb_buf *b)
{
    const sb_attempt *a = f->newest;
    size_t len = 0;
    const char *body = sb_msg_payload(a->row, &len);
    sb__buf_puts(b, "{");
    json_text(b, "unique_message_id", a->unique_id, 0);
    json_int(b, "number_of_processing_attempts", f->attempts);
    json_int(b, "first_time_of_failure", f->first_us);
    json_int(b, "last_time_of_failure", f->last_us);
    json_int(b, "last_attempted_at", f->last_us);
    json_text(b, "message_id", a->message_id, 1);
    json_name(b, "message_type", a->message_type, SB_MS_TYPE_MAX, 1);
    json_name(b, "failed_queue", a->failed_queue, SB_MS_QUEUE_MAX, 1);
    json_name(b, "processing_endpoint", a->processing_endpoint,
              SB_MS_ENDPOINT_MAX, 1);
    json_text(b, "host", a->host, 1);
    json_text(b, "host_id", a->host_id, 1);
    json_text(b, "instance_id", a->instance_id, 1);
    json_text(b, "exception_type", a->exception_type, 1);
    json_text(b, "exception_message", a->exception_message, 1);
    if (a->time_sent_us != 0)
        json_int(b, "time_sent", a->time_sent_us);
    json_text(b, "conversation_id", a->conversation_id, 1);
    json_int(b, "is_system", a->is_system);
    json_text(b, "headers", sb_msg_headers(a->row), 1);
    if (pl->inline_text) {
        sb__buf_puts(b, ",\"body_text\":");
        sb__buf_json_mem(b, body, pl->inline_len);
    }
    json_int(b, "body_size", (int64_t)len);
    json_text(b, "body_content_type", a->content_type, 1);
    json_int(b, "body_stored_externally", pl->stored_externally);
    /* E22: the words search finds, in order (search.c) */
    const char *texts[3];
    size_t lens[3];
    search_texts(a, pl, texts, lens);
    sb__buf_puts(b, ",\"search_text\":\"");
    sb__search_words(b, texts, lens, 3);
    sb__buf_puts(b, "\"}");
}

/* The folded row of unique id `id` in [lo, hi) (sorted by unique id with
 * strcmp, E8), or -1. */
static long find_folded(const batch *x, long lo, long hi, const char *id)
{
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        int c = strcmp(x->folded[mid].newest->unique_id, id);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* The key `t` of folded row `f` (its times are ascending), or -1. */
static long find_time(const sb_folded *f, int64_t t)
{
    size_t lo = 0, hi = f->n_times;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->times[mid] == t)
            return (long)mid;
        if (f->times[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* The keys a statement returned: those it inserted, new to the store. */
static void mark_fresh(batch *x, const sb_rows *rows)
{
    for (size_t r = 0; r < rows->nrows; r++) {
        const char *id = sb__rows_text(rows, r, 0);
        long i = id != NULL ? find_folded(x, 0, x->n_folded, id) : -1;
        long k =
            i >= 0 ? find_time(&x->folded[i], sb__rows_int(rows, r, 1)) : -1;
        if (k >= 0)
            x->fresh[x->folded[i].times + k - x->folded[0].times] = 1;
    }
}

/* The keys as bound parameters, (unique id, time) a row. */
static int insert_keys_bound(batch *x, size_t n_keys, sb_error *err)
{
    sb_value *v = sb__calloc(n_keys * SB__ERRORS_ATTEMPT_WIDTH, sizeof *v);
    if (v == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    size_t at = 0;
    for (long i = 0; i < x->n_folded; i++) {
        const sb_folded *f = &x->folded[i];
        for (size_t k = 0; k < f->n_times; k++) {
            v[at++] = sb__v_text(f->newest->unique_id);
            v[at++] = sb__v_int(f->times[k]);
        }
    }
    int rc = run_rows(x, ERV_ATTEMPTS, v, SB__ERRORS_ATTEMPT_WIDTH, n_keys, 0,
                      mark_fresh, err);
    sb__free(v);
    return rc;
}

/* The keys as JSON arrays [{u, t}], SB_ERRORS_CHUNK messages a statement
 * (SQL Server). */
static int insert_keys_json(batch *x, sb_error *err)
{
    int rc = SB_OK;
    for (long at = 0; rc == SB_OK && at < x->n_folded; at += SB_ERRORS_CHUNK) {
        long end = at + SB_ERRORS_CHUNK < x->n_folded ? at + SB_ERRORS_CHUNK
                                                      : x->n_folded;
        sb__buf_reset(&x->json);
        sb__buf_puts(&x->json, "[");
        for (long i = at; i < end; i++) {
            const sb_folded *f = &x->folded[i];
            for (size_t k = 0; k < f->n_times; k++) {
                sb__buf_puts(&x->json, i > at || k > 0 ? ",{" : "{");
                json_text(&x->json, "u", f->newest->unique_id, 0);
                json_int(&x->json, "t", f->times[k]);
                sb__buf_puts(&x->json, "}");
            }
        }
        sb__buf_puts(&x->json, "]");
        sb_rows *rows = NULL;
        rc = run_json(x, ER_NEW_ATTEMPTS, &rows, err);
        if (rc == SB_OK)
            mark_fresh(x, rows);
        sb__rows_free(rows);
    }
    return rc;
}

/* E10: the batch's attempts are counted once each, whatever their order
 * and however often they come. Their keys (unique id, time of failure)
 * are inserted where absent (in the fold's order, unique id then time:
 * the upsert's lock order), and each row is folded again over the keys
 * that were new: their count, their window, the newest of them. An
 * attempt stored before therefore changes nothing, and a row with no new
 * attempt leaves the batch. */
static int keep_new_attempts(batch *x, sb_error *err)
{
    /* One flag a key: the rows' times are one array (sb__fold). */
    const int64_t *base = x->folded[0].times;
    size_t n_keys = 0;
    for (long i = 0; i < x->n_folded; i++)
        n_keys += x->folded[i].n_times;
    x->fresh = sb__calloc(n_keys, 1);
    if (x->fresh == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    int rc =
        bound(x) ? insert_keys_bound(x, n_keys, err) : insert_keys_json(x, err);
    long kept = 0;
    for (long i = 0; rc == SB_OK && i < x->n_folded; i++) {
        sb_folded f = x->folded[i];
        f.attempts = 0;
        for (size_t k = 0; k < f.n_times; k++) {
            if (!x->fresh[f.times + k - base])
                continue;
            if (f.attempts++ == 0)
                f.first_us = f.times[k];
            f.last_us = f.times[k];
            f.newest = f.of[k];
        }
        if (f.attempts > 0)
            x->folded[kept++] = f;
    }
    if (rc == SB_OK)
        x->n_folded = kept;
    sb__free(x->fresh);
    x->fresh = NULL;
    return rc;
}

/* The rows a statement upserted: whose stored newest attempt is now
 * this batch's. */
static void mark_won(batch *x, const sb_rows *rows)
{
    for (size_t r = 0; r < rows->nrows; r++) {
        const char *id = sb__rows_text(rows, r, 0);
        long i = id != NULL ? find_folded(x, 0, x->n_folded, id) : -1;
        if (i >= 0)
            x->won[i] = sb__rows_int(rows, r, 1) == x->folded[i].last_us;
    }
}

static sb_value text_n(const char *p, size_t len)
{
    sb_value v = {SB_V_TEXT, 0, p, len};
    return v;
}

/* One folded row as the upsert's parameters, in sql.c's column order;
 * `inline_body` is the body's inline text (NUL-terminated at the place's
 * length) or NULL to read it from the row. */
static void row_values(const sb_folded *f, const sb_body_place *pl,
                       const char *inline_body, sb_value *v)
{
    const sb_attempt *a = f->newest;
    size_t len = 0;
    const char *body = sb_msg_payload(a->row, &len);
    *v++ = sb__v_text(a->unique_id);
    *v++ = sb__v_int(f->attempts);
    *v++ = sb__v_int(f->first_us);
    *v++ = sb__v_int(f->last_us);
    *v++ = sb__v_int(f->last_us);
    *v++ = sb__v_text(a->message_id);
    *v++ = sb__v_text(a->message_type);
    *v++ = sb__v_text(a->failed_queue);
    *v++ = sb__v_text(a->processing_endpoint);
    *v++ = sb__v_text(a->host);
    *v++ = sb__v_text(a->host_id);
    *v++ = sb__v_text(a->instance_id);
    *v++ = sb__v_text(a->exception_type);
    *v++ = sb__v_text(a->exception_message);
    *v++ = a->time_sent_us != 0 ? sb__v_int(a->time_sent_us) : sb__v_null();
    *v++ = sb__v_text(a->conversation_id);
    *v++ = sb__v_int(a->is_system);
    *v++ = sb__v_text(sb_msg_headers(a->row));
    *v++ = !pl->inline_text
               ? sb__v_null()
               : text_n(inline_body ? inline_body : body, pl->inline_len);
    *v++ = sb__v_int((int64_t)len);
    *v++ = sb__v_text(a->content_type);
    *v = sb__v_int(pl->stored_externally);
}

/* E10, E11 on SQLite and PostgreSQL: the upsert with its rows bound as
 * parameters. PostgreSQL reads a text parameter up to its NUL, so its
 * search literals (E22) and any inline body prefix shorter than the body
 * (E7) are copied into the batch's buffer first, NUL after each. */
static int upsert_bound(batch *x, sb_error *err)
{
    int pg = x->e->bus->dialect == SB_DIALECT_POSTGRES;
    size_t w = SB__ERRORS_UPSERT_WIDTH(pg), n = (size_t)x->n_folded;
    sb_value *v = sb__calloc(n * w, sizeof *v);
    size_t *off = pg ? sb__calloc(2 * n, sizeof *off) : NULL;
    if (v == NULL || (pg && off == NULL)) {
        sb__free(v);
        sb__free(off);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    sb__buf_reset(&x->json);
    for (size_t i = 0; pg && i < n; i++) {
        const sb_attempt *a = x->folded[i].newest;
        const sb_body_place *pl = &x->place[i];
        size_t len = 0;
        const char *body = sb_msg_payload(a->row, &len);
        const char *texts[3];
        size_t lens[3];
        search_texts(a, pl, texts, lens);
        off[2 * i] = x->json.len;
        int wide = sb__search_vector(&x->json, texts, lens, 3);
        sb__buf_append(&x->json, "", 1);
        v[i * w + w - 1] = sb__v_int(wide);
        off[2 * i + 1] = SIZE_MAX;
        if (pl->inline_text && pl->inline_len < len) {
            off[2 * i + 1] = x->json.len;
            sb__buf_append(&x->json, body, pl->inline_len);
            sb__buf_append(&x->json, "", 1);
        }
    }
    int rc = x->json.failed ? sb__err(err, x->json.failed, NULL,
                                      "a batch statement does not fit in "
                                      "memory")
                            : SB_OK;
    for (size_t i = 0; rc == SB_OK && i < n; i++) {
        const char *prefix = pg && off[2 * i + 1] != SIZE_MAX
                                 ? x->json.data + off[2 * i + 1]
                                 : NULL;
        row_values(&x->folded[i], &x->place[i], prefix, v + i * w);
        if (pg)
            v[i * w + w - 2] = sb__v_text(x->json.data + off[2 * i]);
    }
    if (rc == SB_OK)
        rc = run_rows(x, ERV_UPSERT, v, w, n, !pg, mark_won, err);
    sb__free(off);
    sb__free(v);
    return rc;
}

/* E10, E11: the upsert; marks the rows whose stored newest attempt is now
 * this batch's. SQL Server: SB_ERRORS_CHUNK rows a statement as one JSON
 * array. */
static int upsert(batch *x, sb_error *err)
{
    x->got.messages += x->n_folded;
    if (bound(x))
        return upsert_bound(x, err);
    int rc = SB_OK;
    for (long at = 0; rc == SB_OK && at < x->n_folded; at += SB_ERRORS_CHUNK) {
        long end = at + SB_ERRORS_CHUNK < x->n_folded ? at + SB_ERRORS_CHUNK
                                                      : x->n_folded;
        sb__buf_reset(&x->json);
        sb__buf_puts(&x->json, "[");
        for (long i = at; i < end; i++) {
            if (i > at)
                sb__buf_puts(&x->json, ",");
            row_json(&x->folded[i], &x->place[i], &x->json);
        }
        sb__buf_puts(&x->json, "]");
        sb_rows *rows = NULL;
        rc = run_json(x, ER_UPSERT, &rows, err);
        if (rc == SB_OK)
            mark_won(x, rows);
        sb__rows_free(rows);
    }
    return rc;
}

/* The ids of the winning rows, as a JSON array. */
static void won_ids(batch *x)
{
    sb__buf_reset(&x->json);
    sb__buf_puts(&x->json, "[");
    int any = 0;
    for (long i = 0; i < x->n_folded; i++) {
        if (!x->won[i])
            continue;
        if (any++)
            sb__buf_puts(&x->json, ",");
        sb__buf_json_str(&x->json, x->folded[i].newest->unique_id);
    }
    sb__buf_puts(&x->json, "]");
}

/* E9 step 2: the groups of the messages whose newest attempt is ours are
 * recomputed from it (E12), replacing what was there: rows no longer
 * classified go, new ones come, and the rows that stay are not touched
 * (so their counts and windows do not move). The new rows are bound as
 * parameters where the dialect does (errors.h, ERV_GROUPS), else one
 * JSON array {u, g, t, c}; `keep` holds "unique id|group id" of each,
 * the rows the prune leaves alone. */
static int replace_groups(batch *x, sb_error *err)
{
    int bind = bound(x);
    size_t n_won = 0;
    for (long i = 0; i < x->n_folded; i++)
        n_won += x->won[i] != 0;
    /* Each won message classified in place: its titles and their ids. */
    sb_group_title *gt = sb__calloc(n_won * SB_MAX_GROUPS + 1, sizeof *gt);
    char(*gid)[37] = sb__calloc(n_won * SB_MAX_GROUPS + 1, sizeof *gid);
    sb_value *v =
        bind ? sb__calloc(n_won * SB_MAX_GROUPS * SB__ERRORS_GROUP_WIDTH + 1,
                          sizeof *v)
             : NULL;
    if (gt == NULL || gid == NULL || (bind && v == NULL)) {
        sb__free(gt);
        sb__free(gid);
        sb__free(v);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    sb_buf groups, keep, pair, *gb = &groups;
    sb__buf_init(gb, JSON_MAX);
    sb__buf_init(&keep, JSON_MAX);
    sb__buf_init(&pair, JSON_MAX);
    sb__buf_puts(gb, "[");
    sb__buf_puts(&keep, "[");
    size_t any = 0;
    for (long i = 0; i < x->n_folded; i++) {
        if (!x->won[i])
            continue;
        const sb_attempt *a = x->folded[i].newest;
        sb_classify_input in = {
            a->exception_type,     a->exception_message,
            a->stack_trace,        a->message_type,
            a->failed_queue,       a->instance_id ? a->instance_id : a->host_id,
            a->processing_endpoint};
        size_t n = sb__classify(&in, gt + any);
        for (size_t k = 0; k < n; k++) {
            const sb_group_title *g = &gt[any];
            char *id = gid[any];
            sb__deterministic_guid_str(g->classifier, g->title, id);
            sb__buf_reset(&pair);
            sb__buf_printf(&pair, "%s|%s", a->unique_id, id);
            /* The next reset clears pair's failure: keep inherits it. */
            if (pair.failed)
                keep.failed = pair.failed;
            sb__buf_puts(&keep, any ? "," : "");
            sb__buf_json_mem(&keep, pair.data, pair.len);
            if (bind) {
                sb_value *r = v + any * SB__ERRORS_GROUP_WIDTH;
                r[0] = sb__v_text(a->unique_id);
                r[1] = sb__v_text(id);
                r[2] = sb__v_text(g->title);
                r[3] = sb__v_text(g->classifier);
            } else {
                sb__buf_puts(gb, any ? ",{" : "{");
                json_text(gb, "u", a->unique_id, 0);
                json_text(gb, "g", id, 1);
                json_text(gb, "t", g->title, 1);
                json_text(gb, "c", g->classifier, 1);
                sb__buf_puts(gb, "}");
            }
            any++;
        }
    }
    sb__buf_puts(gb, "]");
    sb__buf_puts(&keep, "]");
    won_ids(x);
    int rc = SB_OK;
    if (x->json.failed || gb->failed || keep.failed || pair.failed)
        rc = sb__err(err, SB_NOMEM, NULL,
                     "a batch statement does not fit in memory");
    sb_value p[2] = {sb__v_text(x->json.data), sb__v_text(keep.data)};
    if (rc == SB_OK)
        rc = sb__query(x->c, x->e->sql.s[ER_PRUNE_GROUPS], p, 2, NULL, NULL,
                       err);
    sb__buf_free(&keep);
    sb__buf_free(&pair);
    if (rc == SB_OK && any && bind)
        rc = run_rows(x, ERV_GROUPS, v, SB__ERRORS_GROUP_WIDTH, any, 0, NULL,
                      err);
    else if (rc == SB_OK && any) {
        p[0] = sb__v_text(gb->data);
        p[1] = sb__v_int(now_us(x->e));
        rc = sb__query(x->c, x->e->sql.s[ER_INSERT_GROUPS], p, 2, NULL, NULL,
                       err);
    }
    sb__buf_free(gb);
    sb__free(v);
    sb__free(gid);
    sb__free(gt);
    return rc;
}

/* E7: a winning attempt's body goes to the body store when it does not
 * stay inline; an inline one removes what an older attempt stored. */
static int write_bodies(batch *x, sb_error *err)
{
    int rc = SB_OK;
    sb__buf_reset(&x->json);
    sb__buf_puts(&x->json, "[");
    int any = 0;
    for (long i = 0; rc == SB_OK && i < x->n_folded; i++) {
        if (!x->won[i])
            continue;
        const sb_attempt *a = x->folded[i].newest;
        if (!x->place[i].stored_externally) {
            sb__buf_puts(&x->json, any++ ? "," : "");
            sb__buf_json_str(&x->json, a->unique_id);
            continue;
        }
        size_t len = 0;
        const void *body = sb_msg_payload(a->row, &len);
        sb_value p[3] = {sb__v_text(a->unique_id), sb__v_blob(body, len),
                         sb__v_text(a->content_type)};
        rc = sb__query(x->c, x->e->sql.s[ER_PUT_BODY], p, 3, NULL, NULL, err);
    }
    sb__buf_puts(&x->json, "]");
    if (rc == SB_OK && any)
        rc = run_json(x, ER_DROP_BODIES, NULL, err);
    return rc;
}

/* E9 step 3: known endpoints, insert-if-absent (a user's monitored flag
 * survives). */
static int record_endpoints(batch *x, sb_error *err)
{
    sb__buf_reset(&x->json);
    sb__buf_puts(&x->json, "[");
    int any = 0;
    for (long i = 0; i < x->n_folded; i++) {
        const sb_attempt *a = x->folded[i].newest;
        char id[37];
        sb__deterministic_guid_str(a->processing_endpoint,
                                   a->host_id ? a->host_id : "", id);
        sb__buf_puts(&x->json, any++ ? ",{" : "{");
        json_text(&x->json, "i", id, 0);
        json_name(
            &x->json, "n", a->processing_endpoint,
            x->e->bus->dialect == SB_DIALECT_MSSQL ? SB_MS_ENDPOINT_MAX : 0, 1);
        json_text(&x->json, "h", a->host_id, 1);
        json_text(&x->json, "m", a->host, 1);
        sb__buf_puts(&x->json, "}");
    }
    sb__buf_puts(&x->json, "]");
    return any ? run_json(x, ER_ENDPOINTS, NULL, err) : SB_OK;
}

/* E16: a message that failed again is in no outstanding retry any more:
 * its claim goes, so it can be retried again. */
static int drop_claims(batch *x, sb_error *err)
{
    sb__buf_reset(&x->json);
    sb__buf_puts(&x->json, "[");
    for (long i = 0; i < x->n_folded; i++) {
        sb__buf_puts(&x->json, i ? "," : "");
        sb__buf_json_str(&x->json, x->folded[i].newest->unique_id);
    }
    sb__buf_puts(&x->json, "]");
    return run_json(x, ER_DROP_CLAIMS, NULL, err);
}

/* E9 step 4, last: a message that failed and was confirmed in one batch
 * ends resolved. */
static int resolve_confirmed(batch *x, sb_error *err)
{
    sb__buf_reset(&x->json);
    sb__buf_puts(&x->json, "[");
    int any = 0;
    for (size_t i = 0; i < x->n_rows; i++) {
        const sb_attempt *a = &x->attempts[i];
        if (!a->retry_confirmed)
            continue;
        sb__buf_puts(&x->json, any++ ? "," : "");
        sb__buf_json_str(&x->json, a->unique_id);
        x->got.confirmations++;
    }
    sb__buf_puts(&x->json, "]");
    int rc = any ? run_json(x, ER_CONFIRM, NULL, err) : SB_OK;
    if (rc == SB_OK && any)
        rc = run_json(x, ER_DROP_CLAIMS, NULL, err);
    return rc;
}

static int batch_tx(sb_conn *c, void *vctx, sb_error *err)
{
    batch *x = vctx;
    batch_free(x); /* a retried transaction starts over */
    x->c = c;
    sb_bus *bus = x->e->bus;
    int rc = sb__claim_on(bus, c, bus->dlq, x->e->batch_size, LEASE_MS, 1,
                          &x->rows, &x->n_rows, err);
    if (rc != SB_OK || x->n_rows == 0)
        return rc;
    x->got.rows = (int64_t)x->n_rows;
    rc = map_rows(x, err);
    if (rc == SB_OK) {
        x->n_folded = sb__fold(x->failures, x->n_failures, &x->folded);
        size_t m = x->n_folded > 0 ? (size_t)x->n_folded : 1;
        x->won = sb__calloc(m, sizeof *x->won);
        x->place = sb__calloc(m, sizeof *x->place);
        if (x->n_folded < 0 || x->won == NULL || x->place == NULL)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    if (rc == SB_OK && x->n_folded > 0)
        rc = keep_new_attempts(x, err);
    for (long i = 0; rc == SB_OK && i < x->n_folded; i++) {
        const sb_attempt *a = x->folded[i].newest;
        size_t len = 0;
        const void *body = sb_msg_payload(a->row, &len);
        sb__body_place(body, len, a->content_type, x->e->max_body,
                       &x->place[i]);
    }
    if (rc == SB_OK && x->n_folded > 0)
        rc = upsert(x, err);
    if (rc == SB_OK && x->n_folded > 0)
        rc = replace_groups(x, err);
    if (rc == SB_OK && x->n_folded > 0)
        rc = write_bodies(x, err);
    if (rc == SB_OK && x->n_folded > 0)
        rc = record_endpoints(x, err);
    if (rc == SB_OK && x->n_folded > 0)
        rc = drop_claims(x, err);
    if (rc == SB_OK)
        rc = resolve_confirmed(x, err);
    /* Every statement here is a read, a guarded upsert or an insert-if-
     * absent: a conflict is a key race, and the batch replays safely. */
    return sb__errors_race(x->e, rc, err);
}

int sb_errors_ingest(sb_errors *e, sb_ingest_stats *stats, sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL)
        return sb__err(err, SB_INVALID, "errors", "errors must not be NULL");
    if (stats != NULL && stats->size != 0 && stats->size < sizeof *stats)
        return sb__err(err, SB_INVALID, "stats",
                       "sb_ingest_stats.size is smaller than any version");
    batch x;
    memset(&x, 0, sizeof x);
    x.e = e;
    sb__buf_init(&x.json, JSON_MAX);
    int rc = SB_OK;
    int changed = 0;
    for (;;) {
        rc = sb__db_run_tx(e->bus->pool, NULL, batch_tx, &x, err);
        if (rc != SB_OK || x.n_rows == 0)
            break;
        changed = 1;
        if (stats != NULL) {
            stats->batches++;
            stats->rows += x.got.rows;
            stats->messages += x.got.messages;
            stats->failed_imports += x.got.failed_imports;
            stats->confirmations += x.got.confirmations;
        }
    }
    batch_free(&x);
    sb__buf_free(&x.json);
    if (changed) /* the batches that committed */
        sb__errors_refresh_windows(e);
    return rc;
}

int sb_errors_failed_import_count(sb_errors *e, int64_t *count, sb_error *err)
{
    sb_error_clear(err);
    if (e == NULL || count == NULL)
        return sb__err(err, SB_INVALID, e ? "count" : "errors",
                       "arguments must not be NULL");
    sb_conn *c = NULL;
    int rc = sb__pool_acquire(e->bus->pool, 5000, &c, err);
    if (rc != SB_OK)
        return rc;
    sb_rows *rows = NULL;
    rc = sb__query(c, e->sql.s[ER_COUNT_IMPORTS], NULL, 0, &rows, NULL, err);
    *count = rc == SB_OK && rows->nrows == 1 ? sb__rows_int(rows, 0, 0) : 0;
    sb__rows_free(rows);
    sb__pool_release(e->bus->pool, c);
    return rc;
}
