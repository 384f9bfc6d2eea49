/*
 * router.h - the HTTP API's routes (docs/internals/server.md, rules S4, S6,
 * S8): method + path -> route and its captured segments, and query
 * strings -> parameters. Pure: no I/O, no allocation; every buffer is the
 * caller's and capped, and bad input is SB_INVALID naming the field and
 * the limit.
 */
#ifndef SB_SERVER_ROUTER_H
#define SB_SERVER_ROUTER_H

#include "core/core.h"

#define SB_PATH_MAX 2048        /* bytes of a request path */
#define SB_SEGMENT_MAX 400      /* bytes of a decoded path segment */
#define SB_ROUTE_CAPTURES 2     /* captured segments of one route */
#define SB_QUERY_MAX 8192       /* bytes of a query string */
#define SB_QUERY_PARAMS 32      /* parameters of one query string */
#define SB_QUERY_KEY_MAX 64     /* bytes of a decoded parameter name */
#define SB_QUERY_VALUE_MAX 1024 /* bytes of a decoded parameter value */

/* Methods, as a mask (a route's allowed set). HEAD is allowed wherever
 * GET is. */
enum {
    SB_HTTP_GET = 1,
    SB_HTTP_HEAD = 2,
    SB_HTTP_POST = 4,
    SB_HTTP_PUT = 8,
    SB_HTTP_PATCH = 16,
    SB_HTTP_DELETE = 32
};

/* Routes. The ServiceControl-shaped error-store routes (S4), sqlbus's
 * own (S6), health and metrics (S8), the dashboard (S13). */
typedef enum sb_route_id {
    SB_R_NONE = 0,
    SB_R_ROOT,                   /* GET /api (issue 22: RootUrls) */
    SB_R_ERRORS,                 /* GET /api/errors */
    SB_R_ERROR,                  /* GET /api/errors/{id} */
    SB_R_ERROR_LAST,             /* GET /api/errors/last/{id} */
    SB_R_ERRORS_SUMMARY,         /* GET /api/errors/summary */
    SB_R_ERRORS_QUEUE_ADDRESSES, /* GET /api/errors/queues/addresses */
    SB_R_ENDPOINT_ERRORS,        /* GET /api/endpoints/{name}/errors */
    SB_R_ERROR_RETRY,            /* POST /api/errors/{id}/retry */
    SB_R_ERRORS_RETRY,           /* POST /api/errors/retry */
    SB_R_ERRORS_QUEUE_RETRY,     /* POST /api/errors/queues/{address}/retry */
    SB_R_ERRORS_RETRY_ALL,       /* POST /api/errors/retry/all */
    SB_R_ENDPOINT_RETRY_ALL,     /* POST /api/errors/{endpoint}/retry/all */
    SB_R_ERROR_ARCHIVE,          /* POST|PATCH /api/errors/{id}/archive */
    SB_R_ERRORS_ARCHIVE,         /* POST|PATCH /api/errors/archive */
    SB_R_ERRORS_UNARCHIVE,       /* PATCH /api/errors/unarchive */
    SB_R_ERRORS_UNARCHIVE_RANGE, /* PATCH /api/errors/{from}...{to}/unarchive */
    SB_R_CLASSIFIERS,            /* GET /api/recoverability/classifiers */
    SB_R_GROUPS,          /* GET /api/recoverability/groups[/{classifier}] */
    SB_R_GROUP,           /* GET /api/recoverability/groups/id/{id} */
    SB_R_GROUP_ERRORS,    /* GET /api/recoverability/groups/{id}/errors */
    SB_R_GROUP_RETRY,     /* POST .../groups/{id}/errors/retry */
    SB_R_GROUP_ARCHIVE,   /* POST .../groups/{id}/errors/archive */
    SB_R_GROUP_UNARCHIVE, /* POST .../groups/{id}/errors/unarchive */
    SB_R_GROUP_COMMENT,   /* POST|DELETE .../groups/{id}/comment */
    SB_R_HISTORY,         /* GET /api/recoverability/history */
    SB_R_ARCHIVED_GROUPS, /* GET /api/errors/groups[/{classifier}] */
    SB_R_PENDING_RETRY,   /* POST /api/pendingretries/retry */
    SB_R_PENDING_RESOLVE, /* PATCH /api/pendingretries/resolve */
    SB_R_PENDING_QUEUE_RETRY,   /* POST /api/pendingretries/queues/retry */
    SB_R_PENDING_QUEUE_RESOLVE, /* PATCH /api/pendingretries/queues/resolve */
    SB_R_EDIT_CONFIG,           /* GET /api/edit/config */
    SB_R_EDIT,                  /* POST /api/edit/{id} */
    SB_R_REDIRECTS,             /* GET|POST /api/redirects */
    SB_R_REDIRECT,              /* PUT|DELETE /api/redirects/{id} */
    SB_R_SEARCH,                /* GET /api/messages/search */
    SB_R_MESSAGE_BODY,          /* GET /api/messages/{id}/body */
    SB_R_KNOWN_ENDPOINTS,       /* GET /api/endpoints/known */
    SB_R_CONFIGURATION,         /* GET /api/configuration */
    SB_R_QUEUES,                /* GET /api/queues */
    SB_R_QUEUE_MESSAGES,        /* GET|POST /api/queues/{q}/messages */
    SB_R_QUEUE_PAUSE,           /* POST /api/queues/{q}/pause (T35) */
    SB_R_QUEUE_RESUME,          /* POST /api/queues/{q}/resume (T35) */
    SB_R_QUEUE_CANCEL,     /* POST /api/queues/{q}/messages/{id}/cancel (T39) */
    SB_R_QUEUE_TTL,        /* PUT /api/queues/{q}/ttl (T40) */
    SB_R_QUEUE_LIMITS,     /* PUT /api/queues/{q}/limits (T36) */
    SB_R_QUEUE_CANCEL_KEY, /* POST /api/queues/{q}/cancel?unique_key= (T38) */
    SB_R_SCHEDULES,        /* GET /api/schedules (T41) */
    SB_R_SCHEDULE,         /* PUT|DELETE /api/schedules/{name} (T41) */
    SB_R_FAILED_MESSAGES,  /* POST /api/failed-messages */
    SB_R_RECOVERY,         /* GET /api/recovery */
    SB_R_STATS,            /* GET /api/stats */
    SB_R_OPERATION,        /* GET /api/operations/{id} */
    SB_R_OPERATIONS,       /* GET /api/operations */
    /* Issue 22: ServicePulse's heartbeats, custom checks, events and
     * configuration screens (api_endpoints.c, api_sc_checks.c,
     * api_sc_misc.c). */
    SB_R_SC_ENDPOINTS,          /* GET /api/endpoints */
    SB_R_SC_ENDPOINT,           /* PATCH|DELETE /api/endpoints/{id} */
    SB_R_SC_ENDPOINTS_SETTINGS, /* GET|PATCH /api/endpointssettings */
    SB_R_SC_ENDPOINT_SETTINGS,  /* PATCH /api/endpointssettings/{name} */
    SB_R_SC_HEARTBEAT_STATS,    /* GET /api/heartbeats/stats */
    SB_R_SC_CUSTOMCHECKS,       /* GET /api/customchecks */
    SB_R_SC_CUSTOMCHECK,        /* DELETE /api/customchecks/{id} */
    SB_R_SC_EVENTLOG,           /* GET /api/eventlogitems */
    SB_R_SC_LICENSE,            /* GET /api/license */
    SB_R_SC_LICENSE_DETAILS,    /* GET /api/license/details */
    SB_R_SC_CONNECTION,         /* GET /api/connection */
    SB_R_SC_EMAIL,              /* GET|POST /api/notifications/email */
    SB_R_SC_EMAIL_TOGGLE,       /* POST /api/notifications/email/toggle */
    SB_R_SC_EMAIL_TEST,         /* POST /api/notifications/email/test */
    SB_R_SC_REMOTES,            /* GET /api/configuration/remotes */
    SB_R_SC_AUTH_CONFIG,        /* GET /api/authentication/configuration */
    SB_R_SC_USAGE_TEST,         /* GET /api/licensing/settings/test */
    SB_R_SC_USAGE_INFO,         /* GET /api/licensing/settings/info */
    SB_R_SC_USAGE_MASKS,        /* GET /api/licensing/settings/masks */
    SB_R_SC_USAGE_REPORT,       /* GET /api/licensing/report/available */
    SB_R_SC_USAGE_ENDPOINTS,    /* GET /api/licensing/endpoints */
    /* issue 22: ServiceControl's message views, and sqlbus's own shapes
     * of the routes that now answer in ServiceControl's */
    SB_R_OWN_ERROR,               /* GET /api/sqlbus/errors/{id} */
    SB_R_MESSAGES_SEARCH_KEYWORD, /* GET /api/messages/search/{keyword} */
    SB_R_MESSAGES2,               /* GET /api/messages2 */
    SB_R_CONVERSATION,            /* GET /api/conversations/{id} */
    SB_R_OWN_ERRORS_SUMMARY,      /* GET /api/sqlbus/errors/summary */
    SB_R_OWN_KNOWN_ENDPOINTS,     /* GET /api/sqlbus/endpoints/known */
    SB_R_OWN_CONFIGURATION,       /* GET /api/sqlbus/configuration */
    SB_R_OWN_HISTORY,             /* GET /api/sqlbus/recoverability/history */
    SB_R_GROUP_ACK, /* DELETE /api/recoverability/unacknowledgedgroups/{id} */
    SB_R_ARCHIVED_GROUP, /* GET /api/archive/groups/id/{id} */
    SB_R_HEALTH,         /* GET /health */
    SB_R_HEALTH_READY,   /* GET /health/ready */
    SB_R_METRICS,        /* GET /metrics */
    SB_R_UI,             /* GET / */
    SB_R_UI_ASSET,       /* GET /ui/{file} */
    SB_R_COUNT
} sb_route_id;

/* What request body a route takes with a method (S7, S10). Every route
 * of the table declares one for each of its methods (a unit test walks
 * the table): GET and HEAD never take one. A route with SB_BODY_NONE
 * refuses any body of one byte or more (whitespace too: only no body or
 * zero bytes is empty) with a 400 naming "body", before its handler runs;
 * on the others the body is parsed as JSON and its top level checked
 * before the handler runs. */
typedef enum sb_body_kind {
    SB_BODY_UNDECLARED = 0, /* an entry that forgot to say: taken as none */
    SB_BODY_NONE,
    SB_BODY_OBJECT,         /* a JSON object */
    SB_BODY_ARRAY,          /* a JSON array */
    SB_BODY_OBJECT_OR_ARRAY /* either (a batch of objects) */
} sb_body_kind;

typedef struct sb_route_match {
    sb_route_id route;   /* SB_R_NONE when no route has this path */
    int allowed;         /* the methods of the path's route (Allow header) */
    const char *pattern; /* the route's pattern: a label for metrics */
    sb_body_kind body;   /* what the route takes with this method (SB_OK) */
    size_t n_captures;
    char captures[SB_ROUTE_CAPTURES][SB_SEGMENT_MAX + 1];
} sb_route_match;

/* The method's mask bit, or 0 for a method no route takes. */
int sb__http_method(const char *method);

/* Route `method` `path` (the path only, no query string). SB_OK:
 * m->route, m->body and the captures (percent-decoded). SB_NOTFOUND: no
 * route has the path (m->allowed 0: 404), or it has, for other methods
 * (m->allowed: 405).
 * SB_INVALID (field "path"): longer than SB_PATH_MAX, a segment over
 * SB_SEGMENT_MAX bytes decoded, a bad or NUL percent escape, not UTF-8,
 * or not starting with '/'. Where two routes match, the one with a fixed
 * segment where the other captures, first from the left, wins. */
int sb__route(const char *method, const char *path, sb_route_match *m,
              sb_error *err);

/* The route table, for tests that walk it: the number of entries, and
 * entry `i`'s pattern, id, methods and the body it takes with `method`
 * (SB_BODY_NONE for a method it does not take). 0 past the end. */
size_t sb__route_count(void);
int sb__route_entry(size_t i, int method, const char **pattern, sb_route_id *id,
                    int *methods, sb_body_kind *body);

typedef struct sb_query_params {
    size_t n;
    struct {
        char key[SB_QUERY_KEY_MAX + 1];
        char value[SB_QUERY_VALUE_MAX + 1];
    } p[SB_QUERY_PARAMS];
} sb_query_params;

/* Parse a query string (without the '?'; NULL or "" is empty): '&'
 * separated "key=value" pairs, percent-decoded, '+' as a space; a key
 * without '=' has the value "". SB_INVALID naming the parameter (or
 * "query") for: a string over SB_QUERY_MAX bytes, more than
 * SB_QUERY_PARAMS parameters, an empty key, a key over SB_QUERY_KEY_MAX or
 * a value over SB_QUERY_VALUE_MAX bytes decoded, a bad or NUL escape, text
 * that is not UTF-8, or a key given twice. */
int sb__query_parse(const char *qs, sb_query_params *out, sb_error *err);

/* The value of `key`, or NULL. */
const char *sb__query_get(const sb_query_params *q, const char *key);

#endif
