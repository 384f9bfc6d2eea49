/*
 * ui.h - the dashboard's files (rule S13), embedded in the program at
 * build time: cmake/embed-ui.cmake turns every file of src/server/ui into
 * a byte array of the generated ui_files.c, with its content type and a
 * strong ETag (FNV-1a of the bytes). http.c serves them for `GET /` and
 * `GET /ui/{file}`. No I/O, no allocation; everything here is const.
 */
#ifndef SB_SERVER_UI_H
#define SB_SERVER_UI_H

#include <stddef.h>

typedef struct sb_ui_file {
    const char *name;         /* "index.html", "app.js", ... */
    const char *content_type; /* "text/html; charset=utf-8", ... */
    const unsigned char *data;
    size_t len;
    const char *etag; /* quoted strong ETag, "\"1a2b3c4d\"" */
} sb_ui_file;

/* The embedded file `name` (no leading slash; "" means index.html), or
 * NULL when there is none (NULL, a path with a '/', an unknown name).
 * The result is static and borrowed; safe from any thread. */
const sb_ui_file *sb__ui_file(const char *name);

/* The generated table (ui_files.c), sorted by name; for ui.c and tests. */
extern const sb_ui_file sb__ui_files[];
extern const size_t sb__ui_file_count;

#endif
