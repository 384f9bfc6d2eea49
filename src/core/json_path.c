/* json_path.c - take one value out of a JSON document by path (rule C24:
 * correlation ids of raw replies; the CLI's `--until PATH=VALUE`). Free of
 * I/O so it can be fuzzed.
 *
 * A path is "$." (optional), then member names separated by '.', each
 * followed by any number of "[N]" array indexes; the first step may be
 * indexes alone ("[0].id", "$[0].id"). Names compare ASCII-case-
 * insensitively: an exact-case member wins, else the first match in
 * document order. A string met on the way whose text is itself a JSON
 * object or array is parsed and walked into. */
#include "core.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* Digits of one array index: below a billion, more than any array here. */
#define INDEX_DIGITS 9

typedef struct path_step {
    const char *name; /* NULL: an array index */
    size_t index;
} path_step;

/* A parsed path: its names, NUL-terminated, live in `names`. */
typedef struct parsed_path {
    char names[SB_JSON_PATH_MAX + 1];
    path_step steps[SB_JSON_PATH_STEPS];
    size_t n;
} parsed_path;

/* The state of one extraction shared by the walks of all its paths. */
typedef struct walker {
    size_t unwrap_left;               /* bytes the unwrapping may still parse */
    json_t *held[SB_JSON_UNWRAP_MAX]; /* trees unwrapped by this walk */
    size_t n_held;
} walker;

static int path_err(sb_error *err, const char *path, const char *what,
                    size_t at)
{
    return sb__err(err, SB_INVALID, "path", "path \"%.80s\": %s (byte %zu)",
                   path, what, at);
}

/* Parse `[digits]` at path[*i]; advances *i past the ']'. */
static int parse_index(const char *path, size_t *i, size_t *out, sb_error *err)
{
    size_t start = *i, k = start + 1, v = 0;
    while (path[k] >= '0' && path[k] <= '9') {
        if (k - start > INDEX_DIGITS)
            return path_err(err, path, "array index is too large", start);
        v = v * 10 + (size_t)(path[k] - '0');
        k++;
    }
    if (k == start + 1 || path[k] != ']')
        return path_err(err, path, "an array index must be [digits]", start);
    *out = v;
    *i = k + 1;
    return SB_OK;
}

static int add_step(const char *path, parsed_path *pp, const char *name,
                    size_t index, size_t at, sb_error *err)
{
    if (pp->n == SB_JSON_PATH_STEPS)
        return path_err(err, path, "too many steps", at);
    pp->steps[pp->n].name = name;
    pp->steps[pp->n].index = index;
    pp->n++;
    return SB_OK;
}

static int parse_path(const char *path, parsed_path *pp, sb_error *err)
{
    pp->n = 0;
    if (path == NULL)
        return sb__err(err, SB_INVALID, "path", "path is required");
    size_t len = strlen(path);
    if (len == 0)
        return sb__err(err, SB_INVALID, "path", "path is empty");
    if (len > SB_JSON_PATH_MAX)
        return sb__err(err, SB_INVALID, "path",
                       "path is %zu bytes; the limit is %d bytes", len,
                       SB_JSON_PATH_MAX);
    if (!sb__utf8_valid(path, len))
        return sb__err(err, SB_INVALID, "path", "path must be valid UTF-8");
    for (size_t k = 0; k < len; k++)
        if ((unsigned char)path[k] < 0x20 || path[k] == 0x7f)
            return sb__err(err, SB_INVALID, "path",
                           "path must not contain control characters "
                           "(byte %zu)",
                           k);
    size_t i = 0;
    if (path[0] == '$' && (path[1] == '.' || path[1] == '['))
        i = path[1] == '.' ? 2 : 1;
    else if (strcmp(path, "$") == 0)
        return path_err(err, path, "\"$\" alone names no member", 0);
    char *names = pp->names;
    int first = 1;
    for (;;) {
        size_t start = i;
        while (path[i] != '\0' && path[i] != '.' && path[i] != '[' &&
               path[i] != ']')
            i++;
        if (path[i] == ']')
            return path_err(err, path, "']' without '['", i);
        if (i == start && !(first && path[i] == '['))
            return path_err(err, path, "empty member name", i);
        int rc = SB_OK;
        if (i > start) {
            memcpy(names, path + start, i - start);
            names[i - start] = '\0';
            rc = add_step(path, pp, names, 0, start, err);
            names += i - start + 1;
        }
        while (rc == SB_OK && path[i] == '[') {
            size_t at = i, index = 0;
            rc = parse_index(path, &i, &index, err);
            if (rc == SB_OK)
                rc = add_step(path, pp, NULL, index, at, err);
        }
        if (rc != SB_OK)
            return rc;
        if (path[i] == '\0')
            return SB_OK;
        if (path[i] != '.')
            return path_err(err, path, "expected '.' or '[' after ']'", i);
        i++;
        first = 0;
    }
}

int sb__json_path_check(const char *path, sb_error *err)
{
    parsed_path pp;
    return parse_path(path, &pp, err);
}

static int ascii_lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static int ascii_case_equal(const char *a, const char *b)
{
    while (*a != '\0' &&
           ascii_lower((unsigned char)*a) == ascii_lower((unsigned char)*b)) {
        a++;
        b++;
    }
    return *a == '\0' && *b == '\0';
}

/* The member `name` of `obj`: exact case first, else the first member in
 * document order (jansson keeps it) equal ignoring ASCII case. */
static json_t *member(json_t *obj, const char *name)
{
    json_t *v = json_object_get(obj, name);
    if (v != NULL)
        return v;
    const char *key;
    json_object_foreach(obj, key, v)
    {
        if (ascii_case_equal(key, name))
            return v;
    }
    return NULL;
}

/* If *cur is a string holding a JSON object or array, parse it and walk
 * into it. The depth per path and the bytes parsed per extraction are
 * bounded, so the work stays a small multiple of the document's size;
 * past either bound the string is left as it is. SB_NOMEM if the parse
 * ran out of memory. */
static int unwrap(walker *w, json_t **cur)
{
    if (!json_is_string(*cur) || w->n_held == SB_JSON_UNWRAP_MAX)
        return SB_OK;
    const char *s = json_string_value(*cur);
    size_t n = json_string_length(*cur), k = 0;
    while (k < n &&
           (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r'))
        k++;
    if (k == n || (s[k] != '{' && s[k] != '[') || n > w->unwrap_left)
        return SB_OK;
    w->unwrap_left -= n;
    unsigned long fails = sb__alloc_failures();
    json_t *inner = json_loadb(s, n, 0, NULL);
    if (sb__alloc_failures() != fails) {
        json_decref(inner); /* a parse that lost bytes to OOM is not used */
        return SB_NOMEM;
    }
    if (inner != NULL) {
        w->held[w->n_held++] = inner;
        *cur = inner;
    }
    return SB_OK;
}

/* The text of a final value: a string as it is, an integer in decimal.
 * SB_NOTFOUND for any other kind. */
static int value_text(const json_t *v, char **out)
{
    if (json_is_string(v))
        *out = sb__strndup(json_string_value(v), json_string_length(v));
    else if (json_is_integer(v)) {
        char num[32];
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(v));
        *out = sb__strdup(num);
    } else
        return SB_NOTFOUND;
    return *out != NULL ? SB_OK : SB_NOMEM;
}

/* Follow one path from `root`; SB_OK with *out (transferred), SB_NOTFOUND
 * or SB_NOMEM. Frees what it unwrapped. */
static int walk_path(walker *w, json_t *root, const parsed_path *pp, char **out)
{
    json_t *cur = root;
    int rc = SB_OK;
    w->n_held = 0;
    for (size_t i = 0; i < pp->n; i++) {
        rc = unwrap(w, &cur);
        if (rc != SB_OK)
            break;
        if (pp->steps[i].name != NULL)
            cur = json_is_object(cur) ? member(cur, pp->steps[i].name) : NULL;
        else
            cur = json_array_get(cur, pp->steps[i].index);
        if (cur == NULL) {
            rc = SB_NOTFOUND;
            break;
        }
    }
    if (rc == SB_OK)
        rc = value_text(cur, out);
    for (size_t i = 0; i < w->n_held; i++)
        json_decref(w->held[i]);
    return rc;
}

int sb__json_extract_text(const void *doc, size_t len, const char *const *paths,
                          size_t n_paths, size_t budget, char **out,
                          sb_error *err)
{
    *out = NULL;
    if (len > budget)
        return sb__err(err, SB_TOOBIG, "payload",
                       "payload is %zu bytes; the budget is %zu bytes", len,
                       budget);
    if (n_paths == 0 || n_paths > SB_JSON_PATHS_MAX)
        return sb__err(err, SB_INVALID, "path",
                       "1 to %d paths are needed (got %zu)", SB_JSON_PATHS_MAX,
                       n_paths);
    parsed_path pp;
    for (size_t i = 0; i < n_paths; i++) {
        int rc = parse_path(paths[i], &pp, err);
        if (rc != SB_OK)
            return rc;
    }
    const char *text = len > 0 ? doc : "";
    const char *nul = memchr(text, '\0', len);
    if (nul != NULL)
        return sb__err(err, SB_INVALID, "payload",
                       "payload is not JSON: a NUL byte at offset %zu",
                       (size_t)(nul - text));
    json_error_t je;
    unsigned long fails = sb__alloc_failures();
    json_t *root = json_loadb(text, len, JSON_DECODE_ANY, &je);
    if (sb__alloc_failures() != fails) {
        json_decref(root);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    if (root == NULL)
        return sb__err(err, SB_INVALID, "payload",
                       "payload is not valid JSON: %s at offset %d", je.text,
                       je.position);
    walker w = {.unwrap_left = len > SIZE_MAX / SB_JSON_UNWRAP_MAX
                                   ? SIZE_MAX
                                   : len * SB_JSON_UNWRAP_MAX};
    int rc = SB_NOTFOUND;
    for (size_t i = 0; i < n_paths && rc == SB_NOTFOUND; i++) {
        (void)parse_path(paths[i], &pp, NULL); /* checked above */
        rc = walk_path(&w, root, &pp, out);
    }
    json_decref(root);
    if (rc == SB_NOMEM)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    if (rc == SB_NOTFOUND && n_paths == 1)
        return sb__err(err, SB_NOTFOUND, "payload",
                       "no string or integer value at path \"%.80s\"",
                       paths[0]);
    if (rc == SB_NOTFOUND)
        return sb__err(err, SB_NOTFOUND, "payload",
                       "no string or integer value at any of the %zu paths",
                       n_paths);
    return SB_OK;
}

int sb__json_extract(const void *doc, size_t len, const char *const *paths,
                     size_t n_paths, size_t budget, char **out, sb_error *err)
{
    int rc = sb__json_extract_text(doc, len, paths, n_paths, budget, out, err);
    if (rc == SB_OK) {
        rc = sb_validate_correlation_id(*out, err);
        if (rc != SB_OK) {
            sb__free(*out);
            *out = NULL;
        }
    }
    return rc;
}
