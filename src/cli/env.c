/* env.c - the environment of a handler command (rule T30): ours, minus
 * any inherited delivery variables, plus those of the message and the
 * descriptor its progress goes to (T42, child.c). */
#include "cli.h"

#include <string.h>

extern char **environ;

static const char *const delivery_vars[] = {
    "SQLBUS_MESSAGE_ID=",     "SQLBUS_QUEUE=",   "SQLBUS_ATTEMPT=",
    "SQLBUS_CORRELATION_ID=", "SQLBUS_HEADERS=", "SQLBUS_PROGRESS_FD=",
};
#define N_VARS (sizeof delivery_vars / sizeof delivery_vars[0])

static int is_delivery_var(const char *entry)
{
    for (size_t i = 0; i < N_VARS; i++)
        if (strncmp(entry, delivery_vars[i], strlen(delivery_vars[i])) == 0)
            return 1;
    return 0;
}

/* "NAME=" + value, or NULL on out of memory. */
static char *pair(const char *name_eq, const char *value)
{
    size_t a = strlen(name_eq), b = strlen(value);
    char *s = sb__malloc(a + b + 1);
    if (s != NULL) {
        memcpy(s, name_eq, a);
        memcpy(s + a, value, b + 1);
    }
    return s;
}

/* The handler environment for `msg` (T30). Transferred: free with
 * cli_env_free; NULL on out of memory. Reads environ: do not call setenv
 * concurrently. */
char **cli_env_for(const sb_msg *msg)
{
    size_t n = 0;
    for (char **e = environ; e != NULL && *e != NULL; e++)
        n++;
    char **envp = sb__calloc(n + N_VARS + 1, sizeof *envp);
    if (envp == NULL)
        return NULL;
    size_t k = 0;
    int failed = 0;
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        if (is_delivery_var(*e))
            continue;
        if ((envp[k++] = sb__strdup(*e)) == NULL)
            failed = 1;
    }
    char attempt[24];
    snprintf(attempt, sizeof attempt, "%d", sb_msg_attempts(msg));
    const char *headers = sb_msg_headers(msg);
    const char *corr = sb_msg_correlation_id(msg);
    const char *values[N_VARS] = {sb_msg_id(msg),
                                  sb_msg_queue(msg),
                                  attempt,
                                  corr,
                                  headers != NULL ? headers : "{}",
                                  CLI_PROGRESS_FD_TEXT};
    for (size_t i = 0; i < N_VARS; i++) {
        if (values[i] == NULL)
            continue; /* no correlation id: the variable is unset */
        if ((envp[k++] = pair(delivery_vars[i], values[i])) == NULL)
            failed = 1;
    }
    envp[k] = NULL;
    if (failed) {
        for (size_t i = 0; i < k; i++)
            sb__free(envp[i]);
        sb__free(envp);
        return NULL;
    }
    return envp;
}

/* Free an environment from cli_env_for. NULL-safe. */
void cli_env_free(char **envp)
{
    if (envp == NULL)
        return;
    for (char **e = envp; *e != NULL; e++)
        sb__free(*e);
    sb__free(envp);
}
