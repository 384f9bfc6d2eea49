/* ui.c - lookup of the dashboard's embedded files (see ui.h). The table
 * itself is generated at build time into ui_files.c; a dozen entries, so
 * a linear scan is all the lookup needs. */
#include "server/ui.h"

#include <string.h>

/* Files are named by their bare name: "index.html" for "" and the table's
 * entries; a name is never a path, so "../x" or "a/b" find nothing even
 * if a file of that name were ever added. */
const sb_ui_file *sb__ui_file(const char *name)
{
    if (name == NULL)
        return NULL;
    if (name[0] == '\0')
        name = "index.html";
    if (strchr(name, '/') != NULL || strchr(name, '\\') != NULL)
        return NULL;
    for (size_t i = 0; i < sb__ui_file_count; i++) {
        if (strcmp(sb__ui_files[i].name, name) == 0)
            return &sb__ui_files[i];
    }
    return NULL;
}
