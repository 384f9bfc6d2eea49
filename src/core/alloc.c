/* alloc.c - the allocator seam: every allocation of the library passes
 * here so tests can fail the Nth one and walk every error path. */
#include "core.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void *libc_malloc(size_t n, void *user)
{
    (void)user;
    return malloc(n);
}

static void *libc_realloc(void *p, size_t n, void *user)
{
    (void)user;
    return realloc(p, n);
}

static void libc_free(void *p, void *user)
{
    (void)user;
    free(p);
}

/* The one process-wide setting (see sb_set_allocator in sqlbus.h). It is
 * written only before the library is used, so reads need no lock. */
static sb_allocator allocator = {libc_malloc, libc_realloc, libc_free, NULL};

/* Allocation failures seen by this thread. jansson reports most of its
 * out-of-memory cases as syntax errors (or drops bytes it failed to save),
 * so json.c compares this counter around each call to tell OOM apart. */
static _Thread_local unsigned long alloc_failures;

unsigned long sb__alloc_failures(void)
{
    return alloc_failures;
}

static void *json_malloc(size_t n)
{
    return sb__malloc(n);
}

void sb_set_allocator(const sb_allocator *a)
{
    if (a == NULL) {
        allocator.malloc_fn = libc_malloc;
        allocator.realloc_fn = libc_realloc;
        allocator.free_fn = libc_free;
        allocator.user = NULL;
    } else {
        allocator = *a;
    }
    json_set_alloc_funcs(json_malloc, sb__free);
}

void *sb__malloc(size_t n)
{
    void *p = allocator.malloc_fn(n == 0 ? 1 : n, allocator.user);
    if (p == NULL)
        alloc_failures++;
    return p;
}

void *sb__calloc(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size) {
        alloc_failures++;
        return NULL;
    }
    size_t n = count * size;
    void *p = sb__malloc(n);
    if (p != NULL)
        memset(p, 0, n == 0 ? 1 : n);
    return p;
}

void *sb__realloc(void *p, size_t n)
{
    void *q = allocator.realloc_fn(p, n == 0 ? 1 : n, allocator.user);
    if (q == NULL)
        alloc_failures++;
    return q;
}

void *sb__list_alloc(size_t n, size_t ptr_size, size_t elem_size,
                     size_t *elems_at)
{
    const size_t align = _Alignof(max_align_t);
    if (n == 0 || ptr_size == 0 || elem_size == 0 || n > SIZE_MAX / ptr_size ||
        n > SIZE_MAX / elem_size) {
        alloc_failures++;
        return NULL;
    }
    size_t at = n * ptr_size;
    if (at > SIZE_MAX - align || n * elem_size > SIZE_MAX - align - at) {
        alloc_failures++;
        return NULL;
    }
    at = (at + align - 1) / align * align;
    *elems_at = at;
    return sb__calloc(1, at + n * elem_size);
}

void sb__free(void *p)
{
    if (p != NULL)
        allocator.free_fn(p, allocator.user);
}

void sb_free(void *p)
{
    sb__free(p);
}

char *sb__strndup(const char *s, size_t n)
{
    if (s == NULL)
        return NULL;
    char *p = sb__malloc(n + 1);
    if (p == NULL)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *sb__strdup(const char *s)
{
    return s == NULL ? NULL : sb__strndup(s, strlen(s));
}

void *sb__memdup(const void *p, size_t n)
{
    void *q = sb__malloc(n);
    if (q != NULL && n > 0)
        memcpy(q, p, n);
    return q;
}
