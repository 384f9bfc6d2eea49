/* log.c - the library reports through the caller's callback, never
 * printing itself. */
#include "core.h"

#include <stdio.h>

void sb__log(const sb_logger *lg, int level, const char *component,
             const char *fmt, ...)
{
    if (lg == NULL || lg->fn == NULL || level < lg->level)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lg->fn(level, component, msg, lg->user);
}
