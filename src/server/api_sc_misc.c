/* api_sc_misc.c - the small documents ServicePulse reads (issue 22), in
 * ServiceControl's shapes: the license (sqlbus needs none, and says so in
 * a form that raises no warning), the connection details, the e-mail
 * notification settings (mail.h) and their test message (notify.h),
 * the remote instances (none) and the authentication configuration
 * (ServicePulse's own sign-in is not sqlbus's: off), and the usage
 * (throughput) report's routes, which say there is no report to make. */
#include "server/api.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "server/mail.h"
#include "server/notify.h"

/* GET /api/license: no license is needed. */
static int license(sb_api_resp *out)
{
    sb__buf_puts(&out->body,
                 "{\"trial_license\":false,\"edition\":\"sqlbus\","
                 "\"registered_to\":\"no license needed: sqlbus is open "
                 "source (MIT)\",\"upgrade_protection_expiration\":\"\","
                 "\"expiration_date\":\"\",\"status\":\"valid\","
                 "\"license_type\":\"Open source\",\"instance_name\":"
                 "\"sqlbus\",\"license_status\":\"Valid\",\"products\":[],"
                 "\"has_endpoint_metadata\":false,"
                 "\"license_extension_url\":\"\"}");
    out->status = 200;
    return 1;
}

/* GET /api/connection: what an endpoint needs to report to this
 * instance. sqlbus's workers write their liveness themselves, so there is
 * no queue to send heartbeats or custom checks to. */
static int connection(const sb_api *a, sb_api_resp *out)
{
    sb_bus_counters *m = sb__calloc(1, sizeof *m);
    if (m == NULL)
        return sb__api_error(out, 503, "unavailable", NULL, "out of memory"), 1;
    m->size = sizeof *m;
    sb_error err;
    int rc = sb_bus_metrics(a->bus, m, &err);
    if (rc != SB_OK) {
        sb__free(m);
        return sb__api_fail(out, rc, &err), 1;
    }
    sb_buf *b = &out->body;
    sb__buf_puts(b, "{\"settings\":{\"ErrorQueue\":");
    sb__buf_json_str(b, m->dead_letter_queue);
    sb__buf_printf(b,
                   ",\"Heartbeats\":{\"Enabled\":true,\"Frequency\":"
                   "\"00:00:%02d\",\"TimeToLive\":\"00:00:%02d\"},"
                   "\"CustomChecks\":{\"Enabled\":true},\"sqlbus\":{"
                   "\"backend\":",
                   SB_HEARTBEAT_INTERVAL_DEFAULT_MS / 1000,
                   SB_HEARTBEAT_INTERVAL_DEFAULT_MS / 1000 *
                       SB_HEARTBEAT_GRACE_INTERVALS);
    sb__buf_json_str(b, a->backend);
    sb__buf_printf(b,
                   ",\"heartbeats\":\"written by sqlbus workers "
                   "(sb_options.heartbeat_interval_ms, sqlbus work "
                   "--heartbeat)\",\"heartbeat_grace_intervals\":%d}},"
                   "\"errors\":[]}",
                   SB_HEARTBEAT_GRACE_INTERVALS);
    sb__free(m);
    out->status = 200;
    return 1;
}

/* The stored e-mail settings (transferred); NULL with the failure in
 * `out`. */
static json_t *email_load(const sb_api *a, sb_api_resp *out)
{
    json_t *doc = NULL;
    sb_error err;
    int rc = sb__mail_load(a->bus, &doc, &err);
    if (rc != SB_OK)
        sb__api_fail(out, rc, &err);
    return doc;
}

static int email_store(const sb_api *a, json_t *doc, sb_api_resp *out)
{
    char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
    if (text == NULL)
        return sb__api_error(out, 503, "unavailable", NULL, "out of memory"), 0;
    sb_error err;
    int rc = sb_setting_put(a->bus, SB_MAIL_SETTING, text, &err);
    sb__free(text);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 0;
    return 1;
}

static const char *text_of(const json_t *doc, const char *name)
{
    const char *s = json_string_value(json_object_get(doc, name));
    return s != NULL ? s : "";
}

/* The settings as ServiceControl's EmailNotifications, without the
 * password: it is kept, never answered. */
static void email_json(sb_buf *b, const json_t *doc)
{
    int f = 1;
    sb__buf_puts(b, "{");
    sb__json_bool_m(b, &f, "enabled",
                    json_is_true(json_object_get(doc, "enabled")));
    sb__json_str_m(b, &f, "smtp_server", text_of(doc, "smtp_server"));
    json_t *port = json_object_get(doc, "smtp_port");
    if (json_is_integer(port))
        sb__json_int_m(b, &f, "smtp_port", json_integer_value(port));
    sb__json_str_m(b, &f, "authentication_account",
                   text_of(doc, "authentication_account"));
    sb__json_bool_m(b, &f, "enable_tls",
                    json_is_true(json_object_get(doc, "enable_tls")));
    sb__json_str_m(b, &f, "to", text_of(doc, "to"));
    sb__json_str_m(b, &f, "from", text_of(doc, "from"));
    sb__buf_puts(b, "}");
}

static int email_get(const sb_api *a, sb_api_resp *out)
{
    json_t *doc = email_load(a, out);
    if (doc == NULL)
        return 1;
    email_json(&out->body, doc);
    json_decref(doc);
    out->status = 200;
    return 1;
}

/* What a text member must be beyond its length. */
enum { ANY_TEXT, RELAY, ONE_ADDRESS, ADDRESSES };

/* Member `name` of the body into `doc` as `as`: a string of at most `max`
 * bytes of `kind`, or null / absent for none; 0 with the 400 naming it
 * otherwise. */
static int take_text(const json_t *body, const char *name, size_t max, int kind,
                     json_t *doc, const char *as, sb_api_resp *out)
{
    json_t *v = json_object_get(body, name);
    if (v == NULL || json_is_null(v)) {
        json_object_del(doc, as);
        return 1;
    }
    if (!json_is_string(v) || json_string_length(v) > max)
        return sb__api_error(out, 400, "invalid", name,
                             "%s must be a string of at most %zu bytes", name,
                             max),
               0;
    if (json_string_length(v) == 0) {
        json_object_del(doc, as);
        return 1;
    }
    const char *text = json_string_value(v);
    sb_error err;
    int rc = kind == RELAY ? sb__mail_check_server(name, text, &err)
             : kind == ONE_ADDRESS
                 ? sb__mail_check_addresses(name, text, 0, &err)
             : kind == ADDRESSES ? sb__mail_check_addresses(name, text, 1, &err)
                                 : SB_OK;
    if (rc == SB_OK && kind == ANY_TEXT &&
        strlen(text) != json_string_length(v))
        rc = sb__err(&err, SB_INVALID, name, "%s must not contain NUL", name);
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 0;
    json_object_set(doc, as, v);
    return 1;
}

/* POST /api/notifications/email: the SMTP settings (ServiceControl's
 * request: smtp_server, smtp_port, authorization_account,
 * authorization_password, enable_tls, to, from). A save without a
 * password keeps the stored one (the form never sees it), unless the
 * account is cleared too. `enabled` is the toggle's. */
static int email_post(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    static const char *const known[] = {"smtp_server",
                                        "smtp_port",
                                        "authorization_account",
                                        "authorization_password",
                                        "enable_tls",
                                        "to",
                                        "from",
                                        NULL};
    if (!sb__api_known_fields(r->json, known, out))
        return 1;
    json_t *port = json_object_get(r->json, "smtp_port");
    if (port != NULL && !json_is_null(port) &&
        (!json_is_integer(port) || json_integer_value(port) < 1 ||
         json_integer_value(port) > 65535))
        return sb__api_error(out, 400, "invalid", "smtp_port",
                             "smtp_port must be a whole number from 1 to "
                             "65535, or null"),
               1;
    json_t *tls = json_object_get(r->json, "enable_tls");
    if (tls != NULL && !json_is_null(tls) && !json_is_boolean(tls))
        return sb__api_error(out, 400, "invalid", "enable_tls",
                             "enable_tls must be true or false"),
               1;
    json_t *doc = email_load(a, out);
    if (doc == NULL)
        return 1;
    json_t *secret = json_object_get(r->json, "authorization_password");
    int keep_secret =
        (secret == NULL || json_is_null(secret) ||
         (json_is_string(secret) && json_string_length(secret) == 0));
    int ok =
        take_text(r->json, "smtp_server", SB_MAIL_TEXT_MAX, RELAY, doc,
                  "smtp_server", out) &&
        take_text(r->json, "authorization_account", SB_MAIL_TEXT_MAX, ANY_TEXT,
                  doc, "authentication_account", out) &&
        take_text(r->json, "to", SB_MAIL_TEXT_MAX, ADDRESSES, doc, "to", out) &&
        take_text(r->json, "from", SB_MAIL_ADDRESS_MAX, ONE_ADDRESS, doc,
                  "from", out) &&
        (keep_secret ||
         take_text(r->json, "authorization_password", SB_MAIL_SECRET_MAX,
                   ANY_TEXT, doc, "authentication_password", out));
    if (ok && text_of(doc, "authentication_account")[0] == '\0')
        json_object_del(doc, "authentication_password");
    if (ok) {
        if (port != NULL && json_is_integer(port))
            json_object_set(doc, "smtp_port", port);
        else
            json_object_del(doc, "smtp_port");
        json_object_set_new(doc, "enable_tls", json_boolean(json_is_true(tls)));
        ok = email_store(a, doc, out);
    }
    if (ok) {
        email_json(&out->body, doc);
        out->status = 200;
    }
    json_decref(doc);
    return 1;
}

/* POST /api/notifications/email/toggle {"enabled": bool}. */
static int email_toggle(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    static const char *const known[] = {"enabled", NULL};
    if (!sb__api_known_fields(r->json, known, out))
        return 1;
    json_t *on = json_object_get(r->json, "enabled");
    if (!json_is_boolean(on))
        return sb__api_error(out, 400, "invalid", "enabled",
                             "enabled must be true or false%s",
                             on == NULL ? " (it is required)" : ""),
               1;
    json_t *doc = email_load(a, out);
    if (doc == NULL)
        return 1;
    json_object_set(doc, "enabled", on);
    if (email_store(a, doc, out)) {
        email_json(&out->body, doc);
        out->status = 200;
    }
    json_decref(doc);
    return 1;
}

/* POST /api/notifications/email/test: a test message through the relay,
 * sent before the answer (at most SB_MAIL_TIMEOUT_MS). A relay that does
 * not take it is a 502 with its answer. */
static int email_test(const sb_api *a, sb_api_resp *out)
{
    sb_error err;
    int rc = sb__notify_test(a, &err);
    if (rc == SB_INVALID || rc == SB_UNAVAILABLE) {
        /* ServicePulse shows this header of a failed test, if any. */
        size_t i = 0;
        for (; err.message[i] != '\0' && i + 1 < sizeof out->reason; i++) {
            unsigned char c = (unsigned char)err.message[i];
            out->reason[i] = c < ' ' || c >= 0x7f ? ' ' : (char)c;
        }
        out->reason[i] = '\0';
    }
    if (rc == SB_UNAVAILABLE && strcmp(err.field, "smtp_server") == 0)
        return sb__api_error(out, 502, "bad_gateway", err.field, "%s",
                             err.message),
               1;
    if (rc != SB_OK)
        return sb__api_fail(out, rc, &err), 1;
    sb__buf_puts(&out->body, "{\"sent\":true}");
    out->status = 200;
    return 1;
}

/* GET /api/authentication/configuration: ServicePulse's OpenID Connect
 * sign-in is off; sqlbus's tokens (Bearer) are not that. */
static int auth_config(sb_api_resp *out)
{
    sb__buf_puts(&out->body,
                 "{\"enabled\":false,\"role_based_authorization_enabled\":"
                 "false,\"client_id\":\"\",\"authority\":\"\","
                 "\"audience\":\"\",\"api_scopes\":\"[]\",\"scopes\":\"\"}");
    out->status = 200;
    return 1;
}

/* The usage report ServiceControl collects for its license: sqlbus needs
 * none, so the connections it would measure through are not there (the
 * queues are this database's tables), no report can be made and no
 * endpoint is counted. */
#define NO_USAGE_CONNECTION                                                    \
    "{\"connection_successful\":false,\"connection_error_messages\":"          \
    "[\"sqlbus has no audit or monitoring instance to measure through\"],"     \
    "\"diagnostics\":\"\"}"
static int usage(sb_route_id route, sb_api_resp *out)
{
    const char *doc = "[]"; /* endpoints, masks */
    if (route == SB_R_SC_USAGE_TEST)
        doc =
            "{\"transport\":\"sqlbus\",\"audit_connection_result\":" NO_USAGE_CONNECTION
            ",\"monitoring_connection_result\":" NO_USAGE_CONNECTION
            ",\"broker_connection_result\":"
            "{\"connection_successful\":true,"
            "\"connection_error_messages\":[],\"diagnostics\":\"the queues "
            "are tables of this database\"}}";
    else if (route == SB_R_SC_USAGE_INFO)
        doc = "{\"service_control_settings\":[],\"monitoring_settings\":[],"
              "\"broker_settings\":[]}";
    else if (route == SB_R_SC_USAGE_REPORT)
        doc = "{\"transport\":\"sqlbus\",\"report_can_be_generated\":false,"
              "\"reason\":\"sqlbus needs no license, so there is no usage "
              "report to send\"}";
    sb__buf_puts(&out->body, doc);
    out->status = 200;
    return 1;
}

int sb__api_sc_misc(const sb_api *a, const sb_api_req *r, sb_api_resp *out)
{
    switch (r->m->route) {
    case SB_R_SC_LICENSE: return license(out);
    case SB_R_SC_LICENSE_DETAILS:
        /* No endpoint metadata to report: ServiceControl's null. */
        sb__buf_puts(&out->body, "null");
        out->status = 200;
        return 1;
    case SB_R_SC_CONNECTION: return connection(a, out);
    case SB_R_SC_EMAIL:
        return r->method == SB_HTTP_POST ? email_post(a, r, out)
                                         : email_get(a, out);
    case SB_R_SC_EMAIL_TOGGLE: return email_toggle(a, r, out);
    case SB_R_SC_EMAIL_TEST: return email_test(a, out);
    case SB_R_SC_REMOTES:
        sb__buf_puts(&out->body, "[]");
        out->status = 200;
        return 1;
    case SB_R_SC_AUTH_CONFIG: return auth_config(out);
    case SB_R_SC_USAGE_TEST:
    case SB_R_SC_USAGE_INFO:
    case SB_R_SC_USAGE_MASKS:
    case SB_R_SC_USAGE_REPORT:
    case SB_R_SC_USAGE_ENDPOINTS: return usage(r->m->route, out);
    default: return 0;
    }
}
