/* msgtype.c - the message type of a headers object, for the per-type
 * metrics (docs/metrics.md): read once per counted message, so the common
 * case is one pass over the JSON text without an allocation; anything the
 * pass does not understand goes to the full parse (json.c). The type is
 * the one the error store records (errors/attempt.c): sb-message-type,
 * else NServiceBus.EnclosedMessageTypes, cut at the first ';' or ',' (the
 * first enclosed type, without its assembly). */
#include "core.h"

#include <string.h>
#include <strings.h>

static const char *const k_keys[2] = {"sb-message-type",
                                      "NServiceBus.EnclosedMessageTypes"};

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* The closing quote of the JSON string whose text starts at `p`, or NULL
 * when it is not closed; `*esc` is set when the string holds an escape. */
static const char *string_end(const char *p, int *esc)
{
    for (;;) {
        p += strcspn(p, "\"\\");
        if (*p == '"')
            return p;
        if (*p == '\0' || p[1] == '\0')
            return NULL;
        *esc = 1;
        p += 2;
    }
}

/* Which of k_keys the key of `len` bytes is (ASCII case ignored, as
 * sb_msg_header does), or -1. */
static int key_index(const char *k, size_t len)
{
    for (int i = 0; i < 2; i++)
        if (len == strlen(k_keys[i]) && strncasecmp(k, k_keys[i], len) == 0)
            return i;
    return -1;
}

/* The type in the header value `v` of `len` bytes: up to the first ';' or
 * ',', without trailing blanks. */
static int derive(const char *v, size_t len, char *out, size_t cap)
{
    size_t n = 0;
    while (n < len && v[n] != ';' && v[n] != ',')
        n++;
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (n == 0)
        return SB_MTYPE_NONE;
    if (n >= cap)
        return SB_MTYPE_TOO_LONG;
    memcpy(out, v, n);
    out[n] = '\0';
    return SB_MTYPE_FOUND;
}

/* Escapes, values that are not strings, odd syntax: the full parse. */
static int slow(const char *json, char *out, size_t cap)
{
    char **kv = NULL;
    size_t n = 0;
    if (sb__headers_parse(json, &kv, &n) != SB_OK)
        return SB_MTYPE_NONE; /* not an object, or out of memory */
    const char *v[2] = {NULL, NULL};
    for (size_t i = 0; i < n; i++) {
        int k = key_index(kv[2 * i], strlen(kv[2 * i]));
        if (k >= 0 && v[k] == NULL)
            v[k] = kv[2 * i + 1];
    }
    int rc = SB_MTYPE_NONE;
    for (int k = 0; k < 2; k++)
        if (v[k] != NULL && v[k][0] != '\0') {
            rc = derive(v[k], strlen(v[k]), out, cap);
            break;
        }
    sb__headers_free(kv, n);
    return rc;
}

int sb__headers_message_type(const char *json, char *out, size_t cap)
{
    if (cap > 0)
        out[0] = '\0';
    if (json == NULL || cap == 0)
        return SB_MTYPE_NONE;
    const char *v[2] = {NULL, NULL};
    size_t vlen[2] = {0, 0};
    const char *p = skip_ws(json);
    if (*p != '{')
        return slow(json, out, cap);
    p = skip_ws(p + 1);
    while (*p != '}') {
        int kesc = 0, vesc = 0;
        if (*p != '"')
            return slow(json, out, cap);
        const char *k = p + 1, *ke = string_end(k, &kesc);
        if (ke == NULL || kesc)
            return slow(json, out, cap);
        p = skip_ws(ke + 1);
        if (*p != ':')
            return slow(json, out, cap);
        p = skip_ws(p + 1);
        if (*p != '"')
            return slow(json, out, cap);
        const char *s = p + 1, *se = string_end(s, &vesc);
        if (se == NULL)
            return slow(json, out, cap);
        int i = key_index(k, (size_t)(ke - k));
        if (i >= 0 && v[i] == NULL) {
            if (vesc)
                return slow(json, out, cap);
            v[i] = s;
            vlen[i] = (size_t)(se - s);
            if (i == 0 && vlen[0] > 0)
                break; /* the first choice: nothing else matters */
        }
        p = skip_ws(se + 1);
        if (*p == ',')
            p = skip_ws(p + 1);
        else if (*p != '}')
            return slow(json, out, cap);
    }
    for (int i = 0; i < 2; i++)
        if (v[i] != NULL && vlen[i] > 0)
            return derive(v[i], vlen[i], out, cap);
    return SB_MTYPE_NONE;
}
