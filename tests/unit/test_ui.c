/*
 * test_ui.c - unit tests of the embedded dashboard (src/server/ui.c and
 * the ui_files.c that cmake/embed-ui.cmake generates; rules S13, S11):
 * lookup by name, "" as index.html, names that are paths refused, every
 * file's content type and build-time ETag (FNV-1a of its bytes), the
 * files index.html refers to all embedded, and nothing the dashboard's
 * Content-Security-Policy would block (inline scripts, style attributes,
 * event-handler attributes) or that would put data into the page as HTML.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/ui.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Whether the file's bytes contain `needle`. */
static int contains(const sb_ui_file *f, const char *needle)
{
    return memmem(f->data, f->len, needle, strlen(needle)) != NULL;
}

static const sb_ui_file *must(const char *name)
{
    const sb_ui_file *f = sb__ui_file(name);
    if (f == NULL)
        fail_msg("%s is not embedded", name);
    return f;
}

/* "" and "index.html" are the same page; GET / serves it. */
static void test_index(void **state)
{
    (void)state;
    const sb_ui_file *a = must("");
    const sb_ui_file *b = must("index.html");
    assert_ptr_equal(a, b);
    assert_string_equal(a->name, "index.html");
    assert_string_equal(a->content_type, "text/html; charset=utf-8");
    assert_true(a->len > 0);
    assert_true(contains(a, "<!doctype html>"));
}

/* A name is a bare file name: paths, NULL and unknown names find nothing. */
static void test_refused_names(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "/index.html", "../index.html", "ui/app.js",  "./app.js",   "index.htm",
        "INDEX.HTML",  "app.js/",       "..\\app.js", "nothing.js", ".",
        "..",          "index.html ",
    };
    assert_null(sb__ui_file(NULL));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (sb__ui_file(bad[i]) != NULL)
            fail_msg("\"%s\" found a file", bad[i]);
    }
}

/* Every entry: found by its own name, sorted and unique, a content type
 * that matches its extension, and the ETag the build computed is the
 * quoted FNV-1a of the bytes as embedded. */
static void test_every_file(void **state)
{
    (void)state;
    assert_true(sb__ui_file_count >= 4);
    for (size_t i = 0; i < sb__ui_file_count; i++) {
        const sb_ui_file *f = &sb__ui_files[i];
        assert_ptr_equal(sb__ui_file(f->name), f);
        if (i > 0 && strcmp(sb__ui_files[i - 1].name, f->name) >= 0)
            fail_msg("table not sorted at %s", f->name);
        assert_non_null(f->data);
        assert_true(f->len > 0);

        const char *want = NULL;
        if (ends_with(f->name, ".html"))
            want = "text/html; charset=utf-8";
        else if (ends_with(f->name, ".css"))
            want = "text/css; charset=utf-8";
        else if (ends_with(f->name, ".js"))
            want = "text/javascript; charset=utf-8";
        else if (ends_with(f->name, ".svg"))
            want = "image/svg+xml";
        if (want != NULL)
            assert_string_equal(f->content_type, want);

        uint32_t h = 2166136261u;
        for (size_t j = 0; j < f->len; j++) {
            h ^= f->data[j];
            h *= 16777619u;
        }
        char etag[16];
        snprintf(etag, sizeof etag, "\"%08x\"", (unsigned)h);
        if (strcmp(f->etag, etag) != 0)
            fail_msg("%s: ETag %s, FNV-1a of its bytes is %s", f->name, f->etag,
                     etag);
    }
}

/* index.html loads its scripts and styles from /ui/NAME; each is there. */
static void test_references(void **state)
{
    (void)state;
    const sb_ui_file *index = must("index.html");
    const char *p = (const char *)index->data;
    const char *end = p + index->len;
    int refs = 0;
    while ((p = memmem(p, (size_t)(end - p), "\"/ui/", 5)) != NULL) {
        p += 5;
        const char *q = memchr(p, '"', (size_t)(end - p));
        assert_non_null(q);
        char name[128];
        assert_true((size_t)(q - p) < sizeof name);
        memcpy(name, p, (size_t)(q - p));
        name[q - p] = '\0';
        must(name);
        refs++;
        p = q;
    }
    assert_true(refs >= 2);
    must("app.js");
    must("app.css");
}

/* S11: the dashboard runs under script-src 'self' and style-src 'self':
 * no inline script, no style or on* attribute in the page; the scripts
 * never build HTML from strings (data goes in through textContent). */
static void test_csp_clean(void **state)
{
    (void)state;
    const sb_ui_file *index = must("index.html");
    const char *p = (const char *)index->data;
    const char *end = p + index->len;
    while ((p = memmem(p, (size_t)(end - p), "<script", 7)) != NULL) {
        const char *close = memchr(p, '>', (size_t)(end - p));
        assert_non_null(close);
        if (memmem(p, (size_t)(close - p), " src=\"/ui/", 10) == NULL)
            fail_msg("index.html has an inline <script>");
        p = close;
    }
    assert_false(contains(index, " style="));
    static const char *const handlers[] = {
        " onclick=",  " onload=",   " onerror=",
        " onsubmit=", " onchange=", " oninput="};
    for (size_t i = 0; i < sizeof handlers / sizeof handlers[0]; i++) {
        if (contains(index, handlers[i]))
            fail_msg("index.html has an%s attribute", handlers[i]);
    }

    static const char *const banned[] = {
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        "setAttribute('style'",
        "setAttribute(\"style\"",
    };
    int scripts = 0;
    for (size_t i = 0; i < sb__ui_file_count; i++) {
        const sb_ui_file *f = &sb__ui_files[i];
        if (!ends_with(f->name, ".js"))
            continue;
        scripts++;
        for (size_t j = 0; j < sizeof banned / sizeof banned[0]; j++) {
            if (contains(f, banned[j]))
                fail_msg("%s uses %s", f->name, banned[j]);
        }
    }
    assert_true(scripts >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index),      cmocka_unit_test(test_refused_names),
        cmocka_unit_test(test_every_file), cmocka_unit_test(test_references),
        cmocka_unit_test(test_csp_clean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
