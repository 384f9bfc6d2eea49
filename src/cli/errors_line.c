/* errors_line.c - one line of an `errors import` file (rule E2): a JSON
 * object {"headers": {...strings...}, "body": "text"} or with
 * "body_base64" instead of "body". Free of I/O: the import reads lines,
 * this checks and decodes them, naming the field at fault. */
#include "cli.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* See cli.h. */
long long cli_base64_decode(const char *s, size_t n, unsigned char *out)
{
    while (n > 0 && s[n - 1] == '=')
        n--;
    if (n % 4 == 1)
        return -1;
    unsigned acc = 0;
    int bits = 0;
    long long len = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int v = c >= 'A' && c <= 'Z'   ? c - 'A'
                : c >= 'a' && c <= 'z' ? c - 'a' + 26
                : c >= '0' && c <= '9' ? c - '0' + 52
                : c == '+'             ? 62
                : c == '/'             ? 63
                                       : -1;
        if (v < 0)
            return -1;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[len++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return len;
}

static int bad(sb_error *err, const char *field, const char *msg)
{
    return sb__err(err, SB_INVALID, field, "%s", msg);
}

/* The headers object: every value a string; compact JSON into *out. */
static int take_headers(json_t *h, char **out, sb_error *err)
{
    if (h == NULL)
        return bad(err, "headers", "required: an object of string values");
    if (!json_is_object(h))
        return bad(err, "headers", "must be an object of string values");
    const char *key;
    json_t *v;
    json_object_foreach(h, key, v)
    {
        if (!json_is_string(v)) {
            char field[300];
            snprintf(field, sizeof field, "headers.%.200s", key);
            return bad(err, field, "a header value must be a string");
        }
    }
    char *text = json_dumps(h, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (text == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    *out = sb__strdup(text);
    free(text);
    return *out != NULL ? SB_OK : sb__err(err, SB_NOMEM, NULL, "out of memory");
}

static int take_body(json_t *text, json_t *b64, cli_import_msg *m,
                     sb_error *err)
{
    if (text != NULL && b64 != NULL)
        return bad(err, "body", "give body or body_base64, not both");
    if (text == NULL && b64 == NULL)
        return bad(err, "body", "required: body (text) or body_base64");
    json_t *v = text != NULL ? text : b64;
    if (!json_is_string(v))
        return bad(err, text != NULL ? "body" : "body_base64",
                   "must be a string");
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    /* Text is copied whole; base64 decodes to at most 3 bytes per 4. */
    m->body = sb__malloc(text != NULL ? n + 1 : n / 4 * 3 + 4);
    if (m->body == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    if (text != NULL) {
        memcpy(m->body, s, n);
        m->len = n;
        return SB_OK;
    }
    long long got = cli_base64_decode(s, n, (unsigned char *)m->body);
    if (got < 0)
        return bad(err, "body_base64", "is not valid base64");
    m->len = (size_t)got;
    return SB_OK;
}

/* See cli.h. */
int cli_import_parse_line(const char *line, size_t n, cli_import_msg *out,
                          sb_error *err)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *doc =
        json_loadb(line, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (doc == NULL) {
        char msg[256];
        snprintf(msg, sizeof msg, "not valid JSON at column %d: %s", je.column,
                 je.text);
        return bad(err, "line", msg);
    }
    int rc = SB_OK;
    if (!json_is_object(doc))
        rc = bad(err, "line", "must be a JSON object");
    const char *key;
    json_t *v;
    if (rc == SB_OK) {
        json_object_foreach(doc, key, v)
        {
            if (strcmp(key, "headers") != 0 && strcmp(key, "body") != 0 &&
                strcmp(key, "body_base64") != 0) {
                char field[256];
                snprintf(field, sizeof field, "%.200s", key);
                rc = bad(err, field,
                         "unknown field (expected headers, body "
                         "or body_base64)");
                break;
            }
        }
    }
    cli_import_msg m;
    memset(&m, 0, sizeof m);
    if (rc == SB_OK)
        rc =
            take_headers(json_object_get(doc, "headers"), &m.headers_json, err);
    if (rc == SB_OK)
        rc = take_body(json_object_get(doc, "body"),
                       json_object_get(doc, "body_base64"), &m, err);
    json_decref(doc);
    if (rc != SB_OK) {
        cli_import_msg_free(&m);
        return rc;
    }
    *out = m;
    return SB_OK;
}

/* NULL-safe on a zeroed message. */
void cli_import_msg_free(cli_import_msg *m)
{
    sb__free(m->headers_json);
    sb__free(m->body);
    memset(m, 0, sizeof *m);
}
