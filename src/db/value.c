/* value.c - typed values and materialised result rows, shared by every
 * driver. Cell bytes live in an arena of fixed blocks that never move, so
 * pointers handed out in cells stay valid until sb__rows_free. */
#include "db/db.h"

#include <string.h>

/* Blocks are at least this big; a larger cell gets a block of its own. */
#define ARENA_BLOCK 4096

typedef struct arena_block {
    struct arena_block *next;
    size_t used;
    size_t cap;
    unsigned char data[]; /* cap bytes */
} arena_block;

/* The arena: a list of blocks, newest first; only the newest is filled. */
typedef struct rows_arena {
    arena_block *head;
} rows_arena;

/*
 * A TEXT value for statement parameters; `s` is borrowed and must stay
 * valid (and NUL-terminated) until the statement has run. NULL gives an
 * SB_V_NULL value.
 */
sb_value sb__v_text(const char *s)
{
    if (s == NULL)
        return sb__v_null();
    sb_value v = {SB_V_TEXT, 0, s, strlen(s)};
    return v;
}

/* Room for n bytes in the arena, or NULL on OOM / overflow. */
static unsigned char *arena_alloc(rows_arena *a, size_t n)
{
    arena_block *b = a->head;
    if (b != NULL && b->cap - b->used >= n) {
        unsigned char *p = b->data + b->used;
        b->used += n;
        return p;
    }
    size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
    if (cap > SIZE_MAX - sizeof(arena_block))
        return NULL;
    b = sb__malloc(sizeof(arena_block) + cap);
    if (b == NULL)
        return NULL;
    b->cap = cap;
    b->used = n;
    /* A block filled by one large cell goes behind the current block so
     * the current block's free space is still used by later small cells. */
    if (n >= ARENA_BLOCK && a->head != NULL) {
        b->next = a->head->next;
        a->head->next = b;
    } else {
        b->next = a->head;
        a->head = b;
    }
    return b->data;
}

/*
 * Allocate an sb_rows of nrows x ncols cells, all SQL NULL. `*out` is
 * transferred (free with sb__rows_free). SB_NOMEM on allocation failure
 * or when nrows * ncols overflows.
 */
int sb__rows_new(size_t nrows, size_t ncols, sb_rows **out)
{
    *out = NULL;
    if (ncols != 0 && nrows > SIZE_MAX / ncols)
        return SB_NOMEM;
    sb_rows *rows = sb__calloc(1, sizeof *rows);
    if (rows == NULL)
        return SB_NOMEM;
    rows->arena = sb__calloc(1, sizeof(rows_arena));
    rows->cells = sb__calloc(nrows * ncols, sizeof(sb_value));
    if (rows->arena == NULL || rows->cells == NULL) {
        sb__rows_free(rows);
        return SB_NOMEM;
    }
    /* calloc's zero bytes are SB_V_NULL with NULL pointers on every
     * platform we build for; make the NULL type explicit anyway. */
    for (size_t i = 0; i < nrows * ncols; i++)
        rows->cells[i] = sb__v_null();
    rows->nrows = nrows;
    rows->ncols = ncols;
    *out = rows;
    return SB_OK;
}

/*
 * Grow `rows` to `nrows` rows (the new ones SQL NULL), for a driver that
 * learns the row count while reading. Cell bytes already set stay where
 * they are (the arena never moves). SB_NOMEM, leaving `rows` as it was.
 */
int sb__rows_grow(sb_rows *rows, size_t nrows)
{
    if (nrows <= rows->nrows)
        return SB_OK;
    if (rows->ncols != 0 && nrows > SIZE_MAX / sizeof(sb_value) / rows->ncols)
        return SB_NOMEM;
    sb_value *cells =
        sb__realloc(rows->cells, nrows * rows->ncols * sizeof *cells + 1);
    if (cells == NULL)
        return SB_NOMEM;
    for (size_t i = rows->nrows * rows->ncols; i < nrows * rows->ncols; i++)
        cells[i] = sb__v_null();
    rows->cells = cells;
    rows->nrows = nrows;
    return SB_OK;
}

/*
 * Set cell (r, c) to a TEXT or BLOB value holding a copy of `len` bytes at
 * `p` (borrowed; may be NULL when len is 0). The copy is NUL-terminated
 * for both types and owned by `rows`. SB_V_NULL clears the cell. Returns
 * SB_INVALID for a bad cell or type, SB_NOMEM on allocation failure.
 */
int sb__rows_set_bytes(sb_rows *rows, size_t r, size_t c, int type,
                       const void *p, size_t len)
{
    if (rows == NULL || r >= rows->nrows || c >= rows->ncols)
        return SB_INVALID;
    sb_value *cell = &rows->cells[r * rows->ncols + c];
    if (type == SB_V_NULL) {
        *cell = sb__v_null();
        return SB_OK;
    }
    if (type != SB_V_TEXT && type != SB_V_BLOB)
        return SB_INVALID;
    if (len == SIZE_MAX)
        return SB_NOMEM;
    unsigned char *copy = arena_alloc(rows->arena, len + 1);
    if (copy == NULL)
        return SB_NOMEM;
    if (len > 0)
        memcpy(copy, p, len);
    copy[len] = '\0';
    cell->type = type;
    cell->i = 0;
    cell->p = copy;
    cell->len = len;
    return SB_OK;
}

/* The cell at (r, c), borrowed from `rows`. Out of range is a caller bug:
 * asserted in debug builds, NULL otherwise. */
const sb_value *sb__rows_at(const sb_rows *rows, size_t r, size_t c)
{
    SB_ASSERT(rows != NULL && r < rows->nrows && c < rows->ncols);
    if (rows == NULL || r >= rows->nrows || c >= rows->ncols)
        return NULL;
    return &rows->cells[r * rows->ncols + c];
}

/* The integer in cell (r, c); 0 for SQL NULL or a non-integer cell. */
int64_t sb__rows_int(const sb_rows *rows, size_t r, size_t c)
{
    const sb_value *v = sb__rows_at(rows, r, c);
    return v != NULL && v->type == SB_V_INT ? v->i : 0;
}

/* The NUL-terminated bytes of a TEXT (or BLOB) cell, borrowed from `rows`;
 * NULL for SQL NULL or an integer cell. */
const char *sb__rows_text(const sb_rows *rows, size_t r, size_t c)
{
    const sb_value *v = sb__rows_at(rows, r, c);
    if (v == NULL || (v->type != SB_V_TEXT && v->type != SB_V_BLOB))
        return NULL;
    return v->p;
}

/* Free rows and every cell's bytes. NULL-safe. */
void sb__rows_free(sb_rows *rows)
{
    if (rows == NULL)
        return;
    rows_arena *a = rows->arena;
    if (a != NULL) {
        arena_block *b = a->head;
        while (b != NULL) {
            arena_block *next = b->next;
            sb__free(b);
            b = next;
        }
        sb__free(a);
    }
    sb__free(rows->cells);
    sb__free(rows);
}
