/* mail.c - the e-mail notification settings and one message sent through
 * the SMTP relay they name (see mail.h). libcurl speaks SMTP: the
 * conversation, STARTTLS, AUTH, and the DATA phase's dot-stuffing are
 * its; this file builds the message and checks every value that reaches
 * a header or an SMTP command, so none can carry a line break. */
#include "server/mail.h"

#include "core/core.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <jansson.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MESSAGE_MAX ((size_t)64 << 10)
#define ENCODED_WORD_MAX 60 /* bytes of text in one RFC 2047 word */

int sb__mail_global_init(sb_error *err)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return sb__err(err, SB_NOMEM, NULL,
                       "libcurl (e-mail) could not be initialised");
    return SB_OK;
}

void sb__mail_global_cleanup(void)
{
    curl_global_cleanup();
}

int sb__mail_load(sb_bus *bus, json_t **out, sb_error *err)
{
    *out = NULL;
    char *text = NULL;
    int rc = sb_setting_get(bus, SB_MAIL_SETTING, &text, NULL, err);
    if (rc != SB_OK && rc != SB_NOTFOUND)
        return rc;
    sb_error_clear(err);
    json_t *j = text != NULL ? json_loads(text, 0, NULL) : NULL;
    sb_free(text);
    if (!json_is_object(j)) {
        json_decref(j);
        j = json_object(); /* none stored, or not ours: as if none */
    }
    if (j == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    *out = j;
    return SB_OK;
}

static const char *text_of(const json_t *doc, const char *name)
{
    const char *s = json_string_value(json_object_get(doc, name));
    return s != NULL ? s : "";
}

static int is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

/* A DNS name of `len` bytes: dot-separated labels of letters, digits
 * and inner hyphens, each 1..63 bytes, 253 in all. */
static int is_dns_name(const char *s, size_t len)
{
    if (len == 0 || len > 253)
        return 0;
    size_t label = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '.') {
            if (label == 0 || s[i - 1] == '-')
                return 0;
            label = 0;
        } else if (is_alnum(c) || (c == '-' && label > 0)) {
            if (++label > 63)
                return 0;
        } else {
            return 0;
        }
    }
    return label > 0 && s[len - 1] != '-';
}

/* `len` bytes of `s` as an IPv4 or IPv6 address (af set), 0 if neither. */
static int ip_family(const char *s, size_t len)
{
    char a[64];
    unsigned char bin[16];
    if (len == 0 || len >= sizeof a)
        return 0;
    memcpy(a, s, len);
    a[len] = '\0';
    if (inet_pton(AF_INET, a, bin) == 1)
        return AF_INET;
    if (inet_pton(AF_INET6, a, bin) == 1)
        return AF_INET6;
    return 0;
}

int sb__mail_check_server(const char *field, const char *text, sb_error *err)
{
    size_t len = strlen(text);
    if (len >= 2 && text[0] == '[' && text[len - 1] == ']') {
        if (ip_family(text + 1, len - 2) == AF_INET6)
            return SB_OK;
    } else if (ip_family(text, len) != 0 || is_dns_name(text, len)) {
        return SB_OK;
    }
    return sb__err(err, SB_INVALID, field,
                   "%s must be a host name or an IP address with no port "
                   "(the port is smtp_port), at most 253 bytes",
                   field);
}

/* One address, `len` bytes at `s`: local@domain with one '@', printable
 * ASCII with no space, quote, parenthesis, angle bracket, comma, colon,
 * semicolon or backslash; the local part at most 64 bytes, the domain a
 * DNS name or [IP]. */
static int is_address(const char *s, size_t len)
{
    if (len < 3 || len > SB_MAIL_ADDRESS_MAX)
        return 0;
    const char *at = NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c >= 0x7f || strchr("\"(),:;<>\\", c) != NULL)
            return 0;
        if (c == '@' && at != NULL)
            return 0; /* one '@' only: no quoted local parts */
        if (c == '@')
            at = s + i;
    }
    if (at == NULL || at == s || at - s > 64)
        return 0;
    const char *d = at + 1;
    size_t dl = len - (size_t)(d - s);
    if (dl >= 2 && d[0] == '[' && d[dl - 1] == ']')
        return ip_family(d + 1, dl - 2) != 0;
    return is_dns_name(d, dl) && memchr(s, '[', (size_t)(at - s)) == NULL;
}

/* Call `fn` for each address of a list (commas or semicolons, blanks
 * around them, empty entries skipped); stops at the first non-zero
 * return and returns it. */
typedef int (*address_fn)(const char *s, size_t len, void *user);
static int each_address(const char *text, address_fn fn, void *user)
{
    const char *p = text;
    while (*p != '\0') {
        while (*p == ' ' || *p == '\t' || *p == ',' || *p == ';')
            p++;
        const char *start = p;
        while (*p != '\0' && *p != ',' && *p != ';')
            p++;
        const char *end = p;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (end > start) {
            int r = fn(start, (size_t)(end - start), user);
            if (r != 0)
                return r;
        }
    }
    return 0;
}

typedef struct counted {
    int n, bad;
} counted;

static int count_one(const char *s, size_t len, void *user)
{
    counted *c = user;
    c->n++;
    if (!is_address(s, len)) {
        c->bad = 1;
        return 1;
    }
    return 0;
}

int sb__mail_check_addresses(const char *field, const char *text, int many,
                             sb_error *err)
{
    counted c = {0, 0};
    each_address(text, count_one, &c);
    if (!many && (c.bad || c.n != 1 || strpbrk(text, ",;") != NULL))
        return sb__err(err, SB_INVALID, field,
                       "%s must be one e-mail address (local@domain, ASCII)",
                       field);
    if (c.bad || c.n == 0)
        return sb__err(err, SB_INVALID, field,
                       "%s must be 1 to %d e-mail addresses (local@domain, "
                       "ASCII) separated by commas",
                       field, SB_MAIL_RCPT_MAX);
    if (c.n > SB_MAIL_RCPT_MAX)
        return sb__err(err, SB_INVALID, field,
                       "%s names %d addresses; at most %d", field, c.n,
                       SB_MAIL_RCPT_MAX);
    return SB_OK;
}

typedef struct rcpts {
    struct curl_slist *list;
    sb_buf *header; /* the To: header's value */
    int nomem;
} rcpts;

static int add_rcpt(const char *s, size_t len, void *user)
{
    rcpts *r = user;
    char a[SB_MAIL_ADDRESS_MAX + 3];
    a[0] = '<';
    memcpy(a + 1, s, len);
    a[len + 1] = '>';
    a[len + 2] = '\0';
    struct curl_slist *l = curl_slist_append(r->list, a);
    if (l == NULL) {
        r->nomem = 1;
        return 1;
    }
    r->list = l;
    if (r->header->len > 0)
        sb__buf_puts(r->header, ", ");
    sb__buf_append(r->header, s, len);
    return 0;
}

/* RFC 5322's date, in English whatever the locale. */
static void rfc5322_date(char out[40])
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed",
                                    "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr",
                                       "May", "Jun", "Jul", "Aug",
                                       "Sep", "Oct", "Nov", "Dec"};
    time_t now = time(NULL);
    struct tm t;
    gmtime_r(&now, &t);
    snprintf(out, 40, "%s, %02d %s %04d %02d:%02d:%02d +0000",
             days[t.tm_wday % 7], t.tm_mday, months[t.tm_mon % 12],
             t.tm_year + 1900, t.tm_hour, t.tm_min, t.tm_sec);
}

/* The subject as a header value: as it is when printable ASCII, else
 * RFC 2047 Q-encoded words of whole UTF-8 characters; control
 * characters become spaces either way. */
static void put_subject(sb_buf *b, const char *s)
{
    int plain = 1;
    for (const char *p = s; *p != '\0'; p++)
        if ((unsigned char)*p >= 0x7f)
            plain = 0;
    if (plain) {
        for (const char *p = s; *p != '\0'; p++)
            sb__buf_append(b, (unsigned char)*p < ' ' ? " " : p, 1);
        return;
    }
    size_t word = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0';) {
        size_t n = *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc0 ? 2 : 1;
        for (size_t i = 1; i < n; i++)
            if (p[i] == '\0')
                n = i;
        if (word > 0 && word + 3 * n > ENCODED_WORD_MAX) {
            sb__buf_puts(b, "?=\r\n ");
            word = 0;
        }
        if (word == 0)
            sb__buf_puts(b, "=?UTF-8?Q?");
        for (size_t i = 0; i < n; i++, p++) {
            if (is_alnum((char)*p)) {
                sb__buf_append(b, p, 1);
                word++;
            } else if (*p == ' ' || *p < ' ') {
                sb__buf_puts(b, "_");
                word++;
            } else {
                sb__buf_printf(b, "=%02X", *p);
                word += 3;
            }
        }
    }
    if (word > 0)
        sb__buf_puts(b, "?=");
}

/* The whole message: headers, a blank line, `text` with CRLF ends. */
static void build(sb_buf *b, const char *from, const char *to,
                  const char *subject, const char *text, const char *domain)
{
    char date[40], id[37];
    rfc5322_date(date);
    sb__uuid7_at(id, sb__wall_us() / 1000);
    sb__buf_printf(b,
                   "Date: %s\r\nFrom: %s\r\nTo: %s\r\nMessage-ID: "
                   "<%s@%s>\r\nSubject: ",
                   date, from, to, id, domain);
    put_subject(b, subject);
    sb__buf_puts(b, "\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; "
                    "charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n"
                    "Auto-Submitted: auto-generated\r\n\r\n");
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '\n')
            sb__buf_puts(b, "\r\n");
        else if (*p != '\r')
            sb__buf_append(b, p, 1);
    }
    if (b->len < 2 || b->data == NULL ||
        memcmp(b->data + b->len - 2, "\r\n", 2))
        sb__buf_puts(b, "\r\n");
}

typedef struct upload {
    const char *p;
    size_t left;
} upload;

static size_t read_message(char *dst, size_t size, size_t n, void *user)
{
    upload *u = user;
    size_t k = size * n < u->left ? size * n : u->left;
    memcpy(dst, u->p, k);
    u->p += k;
    u->left -= k;
    return k;
}

/* This host's name for EHLO and the Message-ID, "localhost" when it is
 * not a DNS name. */
static void helo_domain(char out[256])
{
    if (gethostname(out, 255) != 0 || !is_dns_name(out, strnlen(out, 255)))
        sb__strlcpy(out, "localhost", 256);
    out[255] = '\0';
}

/* libcurl's progress callback, about once a second and at each step:
 * non-zero abandons the transfer. */
static int keep_going(void *user, curl_off_t dltotal, curl_off_t dlnow,
                      curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    const atomic_int *stop = user;
    return atomic_load(stop) != 0;
}

static int perform(const json_t *s, const char *url, long port,
                   struct curl_slist *rcpt, upload *u, const atomic_int *stop,
                   sb_error *err)
{
    CURL *c = curl_easy_init();
    if (c == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    char from[SB_MAIL_ADDRESS_MAX + 3], why[CURL_ERROR_SIZE] = "";
    snprintf(from, sizeof from, "<%s>", text_of(s, "from"));
    const char *account = text_of(s, "authentication_account");
    int tls = json_is_true(json_object_get(s, "enable_tls"));
    CURLcode r = CURLE_OK;
#define SET(opt, v)                                                            \
    if (r == CURLE_OK)                                                         \
    r = curl_easy_setopt(c, opt, v)
    SET(CURLOPT_URL, url);
    SET(CURLOPT_PROTOCOLS_STR, "smtp,smtps");
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_ERRORBUFFER, why);
    SET(CURLOPT_CONNECTTIMEOUT_MS, (long)SB_MAIL_CONNECT_TIMEOUT_MS);
    SET(CURLOPT_TIMEOUT_MS, (long)SB_MAIL_TIMEOUT_MS);
    SET(CURLOPT_USE_SSL, (long)(tls ? CURLUSESSL_ALL : CURLUSESSL_NONE));
    SET(CURLOPT_MAIL_FROM, from);
    SET(CURLOPT_MAIL_RCPT, rcpt);
    SET(CURLOPT_READFUNCTION, read_message);
    SET(CURLOPT_READDATA, u);
    SET(CURLOPT_UPLOAD, 1L);
    if (stop != NULL) {
        SET(CURLOPT_XFERINFOFUNCTION, keep_going);
        SET(CURLOPT_XFERINFODATA, stop);
        SET(CURLOPT_NOPROGRESS, 0L);
    }
    if (account[0] != '\0') {
        SET(CURLOPT_USERNAME, account);
        SET(CURLOPT_PASSWORD, text_of(s, "authentication_password"));
    }
#undef SET
    if (r == CURLE_OK)
        r = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    /* A failed send's connection is shut before the cleanup: libcurl
     * would say QUIT and wait for the answer of a relay that may never
     * give one (a hung relay, or a stop). */
    curl_socket_t fd = CURL_SOCKET_BAD;
    if (r != CURLE_OK &&
        curl_easy_getinfo(c, CURLINFO_ACTIVESOCKET, &fd) == CURLE_OK &&
        fd != CURL_SOCKET_BAD)
        shutdown(fd, SHUT_RDWR);
    curl_easy_cleanup(c);
    if (r == CURLE_OK)
        return SB_OK;
    if (r == CURLE_OUT_OF_MEMORY)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    if (r == CURLE_ABORTED_BY_CALLBACK)
        return sb__err(err, SB_CLOSED, NULL,
                       "the e-mail was abandoned: the server is stopping");
    char last[48] = "";
    if (code > 0)
        snprintf(last, sizeof last, " (its last answer: %ld)", code);
    return sb__err(err, SB_UNAVAILABLE, "smtp_server",
                   "the SMTP relay %s port %ld did not take the message%s: "
                   "%s",
                   text_of(s, "smtp_server"), port, last,
                   why[0] != '\0' ? why : curl_easy_strerror(r));
}

int sb__mail_send(const json_t *s, const char *subject, const char *text,
                  const atomic_int *stop, sb_error *err)
{
    const char *server = text_of(s, "smtp_server");
    const char *from = text_of(s, "from"), *to = text_of(s, "to");
    if (server[0] == '\0')
        return sb__err(err, SB_INVALID, "smtp_server",
                       "no SMTP relay is configured: set smtp_server with "
                       "POST /api/notifications/email");
    if (from[0] == '\0')
        return sb__err(err, SB_INVALID, "from",
                       "no sender is configured: set from with POST "
                       "/api/notifications/email");
    if (to[0] == '\0')
        return sb__err(err, SB_INVALID, "to",
                       "no recipient is configured: set to with POST "
                       "/api/notifications/email");
    int rc = sb__mail_check_server("smtp_server", server, err);
    if (rc == SB_OK)
        rc = sb__mail_check_addresses("from", from, 0, err);
    if (rc == SB_OK)
        rc = sb__mail_check_addresses("to", to, 1, err);
    if (rc != SB_OK)
        return rc;
    json_t *port_v = json_object_get(s, "smtp_port");
    long port = json_is_integer(port_v) ? (long)json_integer_value(port_v)
                                        : SB_MAIL_PORT_DEFAULT;
    char domain[256];
    helo_domain(domain);
    int v6 = strchr(server, ':') != NULL && server[0] != '[';
    char url[SB_MAIL_TEXT_MAX + 300];
    snprintf(url, sizeof url, "%s://%s%s%s:%ld/%s",
             port == 465 ? "smtps" : "smtp", v6 ? "[" : "", server,
             v6 ? "]" : "", port, domain);

    sb_buf header, msg;
    sb__buf_init(&header, SB_MAIL_TEXT_MAX * 2);
    sb__buf_init(&msg, MESSAGE_MAX);
    rcpts r = {NULL, &header, 0};
    each_address(to, add_rcpt, &r);
    if (!r.nomem && header.failed == 0)
        build(&msg, from, header.data, subject, text, domain);
    if (r.nomem || header.failed != 0 || msg.failed != 0)
        rc = sb__err(err, msg.failed == SB_TOOBIG ? SB_TOOBIG : SB_NOMEM, NULL,
                     "the message could not be built (%s)",
                     msg.failed == SB_TOOBIG ? "over 64 KiB" : "out of memory");
    else {
        upload u = {msg.data, msg.len};
        rc = perform(s, url, port, r.list, &u, stop, err);
    }
    curl_slist_free_all(r.list);
    sb__buf_free(&header);
    sb__buf_free(&msg);
    return rc;
}
