/* json.c - the JSON façade: message headers are a JSON object of
 * string -> string. Only core includes jansson (here, json_path.c and the
 * allocator hook in alloc.c), so the parser can be swapped without
 * touching callers. */
#include "core.h"

#include <jansson.h>
#include <string.h>
#include <strings.h>

/* Parse `text` into a JSON object in *out. SB_NOMEM when an allocation
 * failed during the parse: jansson reports that as a syntax error or, when
 * its token buffer cannot grow, silently drops bytes, so any failure seen
 * by the allocator seam discards the result. */
static int load_object(const char *text, size_t len, json_t **out,
                       sb_error *err)
{
    json_error_t je;
    unsigned long fails = sb__alloc_failures();
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    *out = NULL;
    if (sb__alloc_failures() != fails) {
        json_decref(root);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    if (root == NULL)
        return sb__err(err, SB_INVALID, "headers",
                       "headers are not valid JSON: %s at offset %d", je.text,
                       je.position);
    if (!json_is_object(root)) {
        json_decref(root);
        return sb__err(err, SB_INVALID, "headers",
                       "headers must be a JSON object of string values");
    }
    *out = root;
    return SB_OK;
}

/* The checks of sb__headers_validate, and with `outgoing` those of a
 * message being published. */
static int validate(const char *json, size_t len, int outgoing, sb_error *err)
{
    if (len > SB_MAX_HEADERS_BYTES)
        return sb__err(err, SB_INVALID, "headers",
                       "headers are %zu bytes; the limit is %d bytes", len,
                       SB_MAX_HEADERS_BYTES);
    json_t *root;
    int rc = load_object(json, len, &root, err);
    if (rc != SB_OK)
        return rc;
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        if (!json_is_string(val)) {
            rc = sb__err(err, SB_INVALID, "headers",
                         "header \"%.64s\" must have a string value", key);
            break;
        }
        if (key[0] == '\0') {
            rc = sb__err(err, SB_INVALID, "headers",
                         "header names must not be empty");
            break;
        }
        /* C7: what a reply will be matched by is a correlation id. */
        sb_error e;
        if (outgoing && strcasecmp(key, "sb-correlation-id") == 0 &&
            sb_validate_correlation_id(json_string_value(val), &e) != SB_OK) {
            rc = sb__err(err, SB_INVALID, "headers", "header %s: %s", key,
                         e.message);
            break;
        }
    }
    json_decref(root);
    return rc;
}

int sb__headers_validate(const char *json, size_t len, sb_error *err)
{
    return validate(json, len, 0, err);
}

int sb__headers_validate_outgoing(const char *json, size_t len, sb_error *err)
{
    return validate(json, len, 1, err);
}

char *sb__headers_get(const char *json, const char *key)
{
    if (json == NULL || key == NULL)
        return NULL;
    unsigned long fails = sb__alloc_failures();
    json_t *root = json_loads(json, 0, NULL);
    if (root == NULL || sb__alloc_failures() != fails) {
        json_decref(root); /* a parse that lost bytes to OOM is not used */
        return NULL;
    }
    char *out = NULL;
    const char *k;
    json_t *val;
    json_object_foreach(root, k, val)
    {
        if (strcasecmp(k, key) == 0 && json_is_string(val)) {
            out = sb__strndup(json_string_value(val), json_string_length(val));
            break;
        }
    }
    json_decref(root);
    return out;
}

int sb__headers_merge(const char *json, const char *const *kv, char **out,
                      sb_error *err)
{
    *out = NULL;
    json_t *root;
    int rc;
    if (json != NULL && json[0] != '\0') {
        rc = load_object(json, strlen(json), &root, err);
        if (rc != SB_OK)
            return rc;
    } else {
        root = json_object();
        if (root == NULL)
            return sb__err(err, SB_NOMEM, NULL, "out of memory");
        rc = SB_OK;
    }
    for (size_t i = 0; kv != NULL && kv[i] != NULL; i += 2) {
        if (kv[i + 1] == NULL)
            continue;
        if (!sb__utf8_valid(kv[i], strlen(kv[i]))) {
            rc = sb__err(err, SB_INVALID, "headers",
                         "header names must be valid UTF-8");
            break;
        }
        /* jansson refuses invalid UTF-8: keep the value readable. Checked
         * here so a NULL from json_string below can only mean OOM. */
        const char *v = kv[i + 1];
        if (!sb__utf8_valid(v, strlen(v)))
            v = "(value was not valid UTF-8)";
        /* Header names compare case-insensitively (sb__headers_get), so
         * setting "sb-attempts" must replace an "SB-Attempts" too. */
        const char *k;
        void *tmp;
        json_t *old;
        json_object_foreach_safe(root, tmp, k, old)
        {
            if (strcasecmp(k, kv[i]) == 0 && strcmp(k, kv[i]) != 0)
                json_object_del(root, k);
        }
        json_t *s = json_string(v);
        if (s == NULL || json_object_set_new(root, kv[i], s) != 0) {
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
            break;
        }
    }
    if (rc == SB_OK) {
        /* jansson ignores a failed write of an object key while dumping
         * and returns the text without it, so the seam's counter decides. */
        unsigned long fails = sb__alloc_failures();
        *out = json_dumps(root, JSON_COMPACT);
        if (*out != NULL && sb__alloc_failures() != fails) {
            sb__free(*out);
            *out = NULL;
        }
        if (*out == NULL)
            rc = sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    json_decref(root);
    return rc;
}

int sb__headers_parse(const char *json, char ***kv, size_t *n)
{
    *kv = NULL;
    *n = 0;
    unsigned long fails = sb__alloc_failures();
    json_t *root = json_loads(json ? json : "{}", 0, NULL);
    if (sb__alloc_failures() != fails) {
        json_decref(root); /* OOM, reported by jansson as bad syntax */
        return SB_NOMEM;
    }
    if (root == NULL || !json_is_object(root)) {
        json_decref(root);
        return SB_INVALID;
    }
    size_t count = json_object_size(root);
    char **out = sb__calloc(count * 2 + 1, sizeof *out);
    if (out == NULL) {
        json_decref(root);
        return SB_NOMEM;
    }
    size_t i = 0;
    const char *key;
    json_t *val;
    int rc = SB_OK;
    json_object_foreach(root, key, val)
    {
        if (!json_is_string(val))
            continue;
        out[2 * i] = sb__strdup(key);
        out[2 * i + 1] =
            sb__strndup(json_string_value(val), json_string_length(val));
        i++;
        if (out[2 * i - 2] == NULL || out[2 * i - 1] == NULL) {
            rc = SB_NOMEM;
            break;
        }
    }
    json_decref(root);
    if (rc != SB_OK) {
        sb__headers_free(out, i);
        return rc;
    }
    *kv = out;
    *n = i;
    return SB_OK;
}

void sb__headers_free(char **kv, size_t n)
{
    if (kv == NULL)
        return;
    for (size_t i = 0; i < 2 * n; i++)
        sb__free(kv[i]);
    sb__free(kv);
}

int sb__headers_without(const char *json, const char *const *keys, size_t n,
                        char **out, sb_error *err)
{
    *out = NULL;
    json_t *root;
    int rc =
        load_object(json ? json : "{}", json ? strlen(json) : 2, &root, err);
    if (rc != SB_OK)
        return rc;
    /* Keys compare case-insensitively, as in sb__headers_get and merge. */
    const char *key;
    json_t *val;
    void *tmp;
    json_object_foreach_safe(root, tmp, key, val)
    {
        for (size_t i = 0; i < n; i++) {
            if (strcasecmp(key, keys[i]) == 0) {
                json_object_del(root, key);
                break;
            }
        }
    }
    unsigned long fails = sb__alloc_failures();
    *out = json_dumps(root, JSON_COMPACT);
    if (*out != NULL && sb__alloc_failures() != fails) {
        sb__free(*out); /* jansson may have dropped a key: see merge */
        *out = NULL;
    }
    json_decref(root);
    return *out ? SB_OK : sb__err(err, SB_NOMEM, NULL, "out of memory");
}
