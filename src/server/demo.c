/* demo.c - the `sqlbus serve --demo` workload (S2; see demo.h and
 * docs/internals/server.md, "Demo workload (--demo)").
 *
 * A web shop: Shop.Web places orders on demo.orders; Shop.Sales charges
 * them through demo.payments; Shop.Billing ships (demo.shipping, delayed
 * to the next courier pickup), mails (demo.emails, reminders delayed by
 * minutes) and invoices them (demo.invoices, whose endpoint is offline, so
 * it only fills, up to a cap); Shop.Backoffice asks Shop.Reporting for
 * reports (demo.reports) over the channel and follows their progress.
 * Every choice comes from a PRNG in the struct; what fails is written in
 * the payload (a declined card, a SKU whose inventory service times out,
 * a customer whose ledger row deadlocks, an unknown mailbox, a country the
 * carrier refuses, a report with no data), so a message fails the same way
 * on every attempt and is dead-lettered after three. The first orders and
 * reports walk through every scenario, so each screen fills within
 * seconds. */
#include "server/demo.h"

#include "core/core.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_RATE 5.0
#define MAX_RATE 1000.0
#define DEFAULT_SEED 0x5eed0fdeadbeefULL
#define MSGS_PER_ORDER 5.0 /* order, payment, shipment, ~1.3 mails, invoice */
#define INVOICE_CAP 200    /* demo.invoices stops growing here */
#define MAX_REQUESTS 3     /* reports in flight */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 30000
#define PAYLOAD_MAX (64 * 1024)
#define RECOVERY_HANDLER "demo.recovery"

/* The shop's endpoints: they originate the messages (the
 * NServiceBus.OriginatingEndpoint header) and process the queues (the
 * dead letters' endpoint, sb_worker_options.endpoint). All run on the
 * server's bus. */
enum { EP_SALES, EP_BILLING, EP_SHIPPING, EP_NOTIFY, EP_REPORTING, N_EP };

static const char *const endpoint_names[N_EP] = {
    "Shop.Sales", "Shop.Billing", "Shop.Shipping", "Shop.Notifications",
    "Shop.Reporting"};

enum { Q_ORDERS, Q_PAYMENTS, Q_SHIPPING, Q_EMAILS, Q_REPORTS, N_WORKERS };

#define QUEUE_ORDERS "demo.orders"
#define QUEUE_PAYMENTS "demo.payments"
#define QUEUE_SHIPPING "demo.shipping"
#define QUEUE_EMAILS "demo.emails"
#define QUEUE_REPORTS "demo.reports"
#define QUEUE_INVOICES "demo.invoices"

/* What an order is made to run into (written into its payload). */
enum scenario {
    S_OK,
    S_CARD_DECLINED,     /* payments: card ending 0002 */
    S_INVENTORY_TIMEOUT, /* orders: SKU-7734's inventory service */
    S_DEADLOCK,          /* payments: CUST-0042's ledger row */
    S_MAILBOX,           /* emails: an address at example.invalid */
    S_CARRIER            /* shipping: the carrier refuses NO */
};

/* The first orders walk through every failure, then the PRNG decides. */
static const int opening[] = {S_OK, S_CARD_DECLINED, S_OK, S_INVENTORY_TIMEOUT,
                              S_OK, S_DEADLOCK,      S_OK, S_MAILBOX,
                              S_OK, S_CARRIER,       S_OK, S_OK};
#define N_OPENING (sizeof opening / sizeof opening[0])

typedef struct customer {
    const char *id, *name, *email, *city, *country;
} customer;

static const customer customers[] = {
    {"CUST-0193", "Anna Schmidt", "anna.schmidt@example.com", "Berlin", "DE"},
    {"CUST-0218", "Lucas Martin", "lucas.martin@example.fr", "Lyon", "FR"},
    {"CUST-0305", "Sofia Rossi", "sofia.rossi@example.it", "Milano", "IT"},
    {"CUST-0417", "Jan de Vries", "jan.devries@example.nl", "Utrecht", "NL"},
    {"CUST-0522", "Emma Johansson", "emma.johansson@example.se", "Malmo", "SE"},
    {"CUST-0631", "Oliver Brown", "oliver.brown@example.co.uk", "Leeds", "GB"},
    {"CUST-0746", "Mia Novak", "mia.novak@example.cz", "Brno", "CZ"},
    {"CUST-0858", "Noah Keller", "noah.keller@example.ch", "Basel", "CH"},
};
#define N_CUSTOMERS (sizeof customers / sizeof customers[0])
static const customer deadlock_customer = {
    "CUST-0042", "Northwind Traders GmbH", "purchasing@northwind.example",
    "Hamburg", "DE"};
static const customer mailbox_customer = {"CUST-0999", "Max Mustermann",
                                          "max.mustermann@example.invalid",
                                          "Koeln", "DE"};
static const customer carrier_customer = {
    "CUST-0777", "Ingrid Larsen", "ingrid.larsen@example.no", "Bergen", "NO"};

typedef struct product {
    const char *sku, *name;
    int cents;
} product;

static const product products[] = {
    {"SKU-1002", "Espresso beans 1 kg", 1850},
    {"SKU-1107", "Ceramic pour-over dripper", 2400},
    {"SKU-2210", "Burr grinder", 8900},
    {"SKU-3051", "Milk frothing jug 600 ml", 1450},
    {"SKU-4120", "Paper filters (100)", 490},
    {"SKU-5333", "Travel mug 350 ml", 1990},
};
#define N_PRODUCTS (sizeof products / sizeof products[0])
static const product timeout_product = {"SKU-7734",
                                        "Limited edition brewing scale", 12900};

static const char *const card_brands[] = {"VISA", "MASTERCARD", "AMEX"};
static const char *const card_last4[] = {"4242", "4444", "0005"};

/* Report kinds; FAILING_REPORT finds no data and fails. */
static const char *const report_kinds[] = {"daily-sales", "top-customers",
                                           "inventory-valuation"};
#define FAILING_REPORT "refunds-by-region"

/* ---- the exceptions, as .NET's Exception.ToString() writes them ---- */

#define NSB_FRAMES                                                             \
    "   at NServiceBus.InvokeHandlerTerminator.Terminate("                     \
    "IInvokeHandlerContext context, CancellationToken cancellationToken)\n"    \
    "   at NServiceBus.LoadHandlersConnector.Invoke(IIncomingLogicalMessage"   \
    "Context context, Func`2 stage)\n"                                         \
    "   at NServiceBus.MutateIncomingMessageBehavior.InvokeIncomingMessage"    \
    "Mutators(IIncomingLogicalMessageContext context, Func`2 next)\n"          \
    "   at NServiceBus.TransportReceiveToPhysicalMessageConnector.Invoke("     \
    "ITransportReceiveContext context, Func`2 next)\n"                         \
    "   at NServiceBus.RecoverabilityComponent.Invoke(MessageContext "         \
    "messageContext, CancellationToken cancellationToken)"

#define TIMEOUT_TYPE "System.TimeoutException"
#define TIMEOUT_MESSAGE "The operation timed out after 30 s"
#define TIMEOUT_TRACE                                                          \
    TIMEOUT_TYPE                                                               \
    ": " TIMEOUT_MESSAGE "\n"                                                  \
    "   at Shop.Sales.Inventory.InventoryClient.ReserveAsync(String orderId, " \
    "IReadOnlyList`1 lines, CancellationToken cancellationToken) in "          \
    "/src/Shop.Sales/Inventory/InventoryClient.cs:line 87\n"                   \
    "   at Shop.Sales.Handlers.PlaceOrderHandler.Handle(PlaceOrder message, "  \
    "IMessageHandlerContext context) in "                                      \
    "/src/Shop.Sales/Handlers/PlaceOrderHandler.cs:line 42\n" NSB_FRAMES

#define DECLINED_TYPE "Shop.Payments.CardDeclinedException"
#define DECLINED_TRACE_FRAMES                                                  \
    "   at Shop.Billing.Payments.CardGateway.ChargeAsync(ChargeRequest "       \
    "request, CancellationToken cancellationToken) in "                        \
    "/src/Shop.Billing/Payments/CardGateway.cs:line 133\n"                     \
    "   at Shop.Billing.Handlers.ChargeCreditCardHandler.Handle("              \
    "ChargeCreditCard message, IMessageHandlerContext context) in "            \
    "/src/Shop.Billing/Handlers/ChargeCreditCardHandler.cs:line 57\n" NSB_FRAMES

#define SQL_TYPE "System.Data.SqlClient.SqlException"
#define SQL_MESSAGE                                                            \
    "Transaction (Process ID 73) was deadlocked on lock resources with "       \
    "another process and has been chosen as the deadlock victim. Rerun the "   \
    "transaction."
#define SQL_FRAMES                                                             \
    SQL_TYPE                                                                   \
    " (0x80131904): " SQL_MESSAGE "\n"                                         \
    "   at System.Data.SqlClient.SqlConnection.OnError(SqlException "          \
    "exception, Boolean breakConnection, Action`1 wrapCloseInAction)\n"        \
    "   at System.Data.SqlClient.TdsParser.ThrowExceptionAndWarning("          \
    "TdsParserStateObject stateObj, Boolean callerHasConnectionLock, "         \
    "Boolean asyncClose)\n"                                                    \
    "   at System.Data.SqlClient.TdsParser.TryRun(RunBehavior runBehavior, "   \
    "SqlCommand cmdHandler, SqlDataReader dataStream, "                        \
    "BulkCopySimpleResultSet bulkCopyHandler, TdsParserStateObject "           \
    "stateObj, Boolean& dataReady)\n"                                          \
    "   at System.Data.SqlClient.SqlCommand.FinishExecuteReader("              \
    "SqlDataReader ds, RunBehavior runBehavior, String resetOptionsString)\n"
#define SQL_TAIL                                                               \
    NSB_FRAMES "\nClientConnectionId:3c1f0a52-9d7e-4b8a-a1d3-6f2e0b9c4d11\n"   \
               "Error Number:1205,State:51,Class:13"
#define SQL_TRACE_PAYMENTS                                                     \
    SQL_FRAMES                                                                 \
    "   at Shop.Billing.Data.LedgerRepository.AppendAsync(LedgerEntry "        \
    "entry, CancellationToken cancellationToken) in "                          \
    "/src/Shop.Billing/Data/LedgerRepository.cs:line 64\n"                     \
    "   at Shop.Billing.Handlers.ChargeCreditCardHandler.Handle("              \
    "ChargeCreditCard message, IMessageHandlerContext context) in "            \
    "/src/Shop.Billing/Handlers/ChargeCreditCardHandler.cs:line 71\n" SQL_TAIL
#define SQL_TRACE_ORDERS                                                       \
    SQL_FRAMES                                                                 \
    "   at Shop.Sales.Data.OrderRepository.InsertAsync(Order order, "          \
    "CancellationToken cancellationToken) in "                                 \
    "/src/Shop.Sales/Data/OrderRepository.cs:line 38\n"                        \
    "   at Shop.Sales.Handlers.PlaceOrderHandler.Handle(PlaceOrder message, "  \
    "IMessageHandlerContext context) in "                                      \
    "/src/Shop.Sales/Handlers/PlaceOrderHandler.cs:line 51\n" SQL_TAIL

#define SMTP_TYPE "System.Net.Mail.SmtpFailedRecipientException"
#define SMTP_TRACE_FRAMES                                                      \
    "   at System.Net.Mail.SmtpTransport.SendMail(MailAddress sender, "        \
    "MailAddressCollection recipients, String deliveryNotify, Boolean "        \
    "allowUnicode, SmtpFailedRecipientException& exception)\n"                 \
    "   at System.Net.Mail.SmtpClient.Send(MailMessage message)\n"             \
    "   at Shop.Notifications.Mail.SmtpMailer.SendAsync(MailMessage mail, "    \
    "CancellationToken cancellationToken) in "                                 \
    "/src/Shop.Notifications/Mail/SmtpMailer.cs:line 29\n"                     \
    "   at Shop.Notifications.Handlers.SendOrderConfirmationHandler.Handle("   \
    "SendOrderConfirmation message, IMessageHandlerContext context) in "       \
    "/src/Shop.Notifications/Handlers/SendOrderConfirmationHandler.cs:line "   \
    "35\n" NSB_FRAMES

#define CARRIER_TYPE "Shop.Shipping.CarrierRejectedException"
#define CARRIER_TRACE_FRAMES                                                   \
    "   at Shop.Shipping.Carriers.ExpressCarrierClient.BookAsync(Shipment "    \
    "shipment, CancellationToken cancellationToken) in "                       \
    "/src/Shop.Shipping/Carriers/ExpressCarrierClient.cs:line 112\n"           \
    "   at Shop.Shipping.Handlers.ShipOrderHandler.Handle(ShipOrder "          \
    "message, IMessageHandlerContext context) in "                             \
    "/src/Shop.Shipping/Handlers/ShipOrderHandler.cs:line 46\n" NSB_FRAMES

#define REPORT_TYPE "System.InvalidOperationException"
#define REPORT_MESSAGE "Sequence contains no elements"
#define REPORT_TRACE                                                           \
    REPORT_TYPE                                                                \
    ": " REPORT_MESSAGE "\n"                                                   \
    "   at System.Linq.ThrowHelper.ThrowNoElementsException()\n"               \
    "   at System.Linq.Enumerable.First[TSource](IEnumerable`1 source)\n"      \
    "   at Shop.Reporting.Builders.RefundsByRegionBuilder.BuildAsync("         \
    "ReportRequest request, CancellationToken cancellationToken) in "          \
    "/src/Shop.Reporting/Builders/RefundsByRegionBuilder.cs:line 58\n"         \
    "   at Shop.Reporting.Handlers.GenerateReportHandler.Handle("              \
    "GenerateReport message, IMessageHandlerContext context) in "              \
    "/src/Shop.Reporting/Handlers/GenerateReportHandler.cs:line 40\n" NSB_FRAMES

enum { RNG_PUBLISHER, RNG_REQUESTER, RNG_HANDLERS, N_RNG };

typedef struct demo_request {
    sb_waiter *w; /* NULL: the slot is free */
    char report_id[40];
    int progress; /* progress replies seen */
} demo_request;

struct sb_demo {
    sb_bus *bus; /* borrowed: the server's, so its counters and
                              metrics see the demo's traffic */
    sb_channel *ch;
    sb_worker *workers[N_WORKERS];
    sb_log_fn log;
    void *log_user;
    int64_t order_period_us;
    int64_t order_base; /* the first order's number */
    char host[128];
    char instance[200]; /* the channel's instance id (sb-reply-to) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stopping;
    pthread_t publisher, requester;
    int started_publisher, started_requester;
    /* under mu */
    uint64_t rng[N_RNG]; /* the PRNG streams */
    int invoices_open;   /* demo.invoices is below its cap */
    int64_t orders, requests, replies, error_replies, timeouts, recovered;
    int said_reply, said_error_reply;
    /* the requester thread's alone */
    demo_request req[MAX_REQUESTS];
};

/* ---- small helpers ---- */

static void say(sb_demo *d, int level, const char *fmt, ...) SB_PRINTF(3, 4);

static void say(sb_demo *d, int level, const char *fmt, ...)
{
    if (d->log == NULL)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    d->log(level, "demo", line, d->log_user);
}

/* Wait up to `ms` or until stopping; returns whether stopping. */
static int nap(sb_demo *d, int64_t ms)
{
    int64_t until = sb__mono_us() + ms * 1000;
    pthread_mutex_lock(&d->mu);
    while (!d->stopping && sb__mono_us() < until)
        sb__cond_wait_until(&d->cv, &d->mu, until);
    int s = d->stopping;
    pthread_mutex_unlock(&d->mu);
    return s;
}

/* splitmix64: small, fast and good enough to pick a customer. One
 * stream per thread of choices, so what the publisher and the requester
 * pick does not depend on how the handlers interleave. */
static uint64_t rnd(sb_demo *d, int stream)
{
    pthread_mutex_lock(&d->mu);
    d->rng[stream] += 0x9e3779b97f4a7c15ULL;
    uint64_t z = d->rng[stream];
    pthread_mutex_unlock(&d->mu);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A number in [lo, hi]. */
static int64_t rnd_range(sb_demo *d, int stream, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd(d, stream) % (uint64_t)(hi - lo + 1));
}

static void count(sb_demo *d, int64_t *counter)
{
    pthread_mutex_lock(&d->mu);
    (*counter)++;
    pthread_mutex_unlock(&d->mu);
}

/* "2026-12-01 05:10:00:123456 Z" (NServiceBus) or ISO 8601 with ms. */
static void format_time(char *out, size_t cap, int64_t us, int nsb)
{
    time_t secs = (time_t)(us / 1000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    if (nsb)
        snprintf(out, cap, "%04d-%02d-%02d %02d:%02d:%02d:%06lld Z",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, (long long)(us % 1000000));
    else
        snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, (long long)(us % 1000000 / 1000));
}

/* A copy of the string (or integer) at `path` in the message's JSON
 * payload, or NULL (sb__free). */
static char *field(const sb_msg *m, const char *path)
{
    size_t len = 0;
    const void *p = sb_msg_payload(m, &len);
    char *out = NULL;
    if (p == NULL || sb__json_extract_text(p, len, &path, 1, PAYLOAD_MAX, &out,
                                           NULL) != SB_OK)
        return NULL;
    return out;
}

static int field_is(const sb_msg *m, const char *path, const char *want)
{
    char *v = field(m, path);
    int is = v != NULL && strcmp(v, want) == 0;
    sb__free(v);
    return is;
}

/* `"key":"value"` (value JSON-escaped; NULL = "") with a leading comma
 * unless first. */
static void put_str(sb_buf *b, const char *key, const char *value, int first)
{
    sb__buf_printf(b, "%s\"%s\":", first ? "" : ",", key);
    sb__buf_json_str(b, value);
}

/* Copy the string at `path` of the message into `b` as `key`. */
static void copy_field(sb_buf *b, const sb_msg *m, const char *key,
                       const char *path, int first)
{
    char *v = field(m, path);
    put_str(b, key, v, first);
    sb__free(v);
}

/* ---- publishing with NServiceBus's headers ---- */

typedef struct demo_send {
    const char *queue;
    const char *type;           /* the message type, without assembly */
    const char *intent;         /* "Send" or "Publish" */
    const char *from;           /* the originating endpoint */
    const sb_msg *cause;        /* the message being handled, or NULL */
    const char *correlation_id; /* a request's (sb-correlation-id), or NULL */
    int64_t delay_ms;
} demo_send;

static int send_msg(sb_demo *d, sb_bus *bus, const demo_send *s,
                    const sb_buf *payload, sb_error *err)
{
    if (payload->failed)
        return sb__err(err, payload->failed, "payload",
                       "cannot build the %s payload", s->type);
    char id[37], conversation[37], sent[48], enclosed[256];
    int rc = sb_uuid7(id, err);
    if (rc != SB_OK)
        return rc;
    const char *conv =
        s->cause ? sb_msg_header(s->cause, "NServiceBus.ConversationId") : NULL;
    if (conv == NULL) {
        memcpy(conversation, id, sizeof id);
        conv = conversation;
    }
    const char *related =
        s->cause ? sb_msg_header(s->cause, "NServiceBus.MessageId") : NULL;
    const char *corr =
        s->cause ? sb_msg_header(s->cause, "NServiceBus.CorrelationId") : NULL;
    format_time(sent, sizeof sent, sb__wall_us(), 1);
    snprintf(enclosed, sizeof enclosed,
             "%s, Shop.Messages, Version=1.4.0.0, Culture=neutral, "
             "PublicKeyToken=null",
             s->type);
    const char *kv[] = {"NServiceBus.MessageId",
                        id,
                        "NServiceBus.MessageIntent",
                        s->intent,
                        "NServiceBus.ConversationId",
                        conv,
                        "NServiceBus.CorrelationId",
                        corr ? corr : id,
                        "NServiceBus.RelatedTo",
                        related,
                        "NServiceBus.EnclosedMessageTypes",
                        enclosed,
                        "NServiceBus.ContentType",
                        "application/json",
                        "NServiceBus.OriginatingEndpoint",
                        s->from,
                        "NServiceBus.OriginatingMachine",
                        d->host,
                        "NServiceBus.ReplyToAddress",
                        s->from,
                        "NServiceBus.TimeSent",
                        sent,
                        "NServiceBus.Version",
                        "8.2.4",
                        "sb-correlation-id",
                        s->correlation_id,
                        "sb-reply-to",
                        s->correlation_id ? d->instance : NULL,
                        NULL};
    char *headers = NULL;
    rc = sb__headers_merge(NULL, kv, &headers, err);
    if (rc != SB_OK)
        return rc;
    sb_outgoing o = {id, payload->data, payload->len, headers, s->delay_ms};
    rc = sb_publish(bus, NULL, s->queue, &o, NULL, err);
    sb__free(headers);
    return rc;
}

/* ---- the handlers ---- */

/* Simulated work of lo..hi ms, cut short once the demo stops (the handler
 * then finishes at once: a stop never fails a message). */
static void work(sb_demo *d, int64_t lo, int64_t hi)
{
    nap(d, rnd_range(d, RNG_HANDLERS, lo, hi));
}

static int fail(sb_delivery *dl, int rc, const char *type, const char *msg,
                const char *trace)
{
    sb_delivery_fail(dl, type, msg, trace);
    return rc;
}

/* demo.orders (Shop.Sales): PlaceOrder -> ChargeCreditCard. */
static int orders_handler(sb_delivery *dl, void *user)
{
    sb_demo *d = user;
    const sb_msg *m = sb_delivery_msg(dl);
    work(d, 30, 150);
    if (field_is(m, "lines[0].sku", timeout_product.sku))
        return fail(dl, SB_TIMEOUT, TIMEOUT_TYPE, TIMEOUT_MESSAGE,
                    TIMEOUT_TRACE);
    /* Now and then the first attempt loses a deadlock; the retry works. */
    char *order = field(m, "orderId");
    size_t n = order ? strlen(order) : 0;
    int unlucky = n > 0 && order[n - 1] == '3'; /* one order in ten */
    if (unlucky && sb_msg_attempts(m) == 1) {
        sb__free(order);
        return fail(dl, SB_BUSY, SQL_TYPE, SQL_MESSAGE, SQL_TRACE_ORDERS);
    }
    sb_buf b;
    sb__buf_init(&b, PAYLOAD_MAX);
    sb__buf_puts(&b, "{");
    put_str(&b, "orderId", order, 1);
    copy_field(&b, m, "customerId", "customer.id", 0);
    copy_field(&b, m, "customerEmail", "customer.email", 0);
    sb__buf_puts(&b, ",\"shipTo\":{");
    copy_field(&b, m, "city", "customer.city", 1);
    copy_field(&b, m, "country", "customer.country", 0);
    sb__buf_puts(&b, "},\"amount\":{");
    copy_field(&b, m, "value", "total.amount", 1);
    copy_field(&b, m, "currency", "total.currency", 0);
    sb__buf_puts(&b, "},\"card\":{");
    copy_field(&b, m, "brand", "payment.brand", 1);
    copy_field(&b, m, "last4", "payment.last4", 0);
    sb__buf_puts(&b, "}}");
    sb__free(order);
    demo_send s = {QUEUE_PAYMENTS,
                   "Shop.Messages.Commands.ChargeCreditCard",
                   "Send",
                   endpoint_names[EP_SALES],
                   m,
                   NULL,
                   0};
    sb_error err;
    int rc = send_msg(d, d->bus, &s, &b, &err);
    sb__buf_free(&b);
    return rc;
}

/* demo.payments (Shop.Billing): ChargeCreditCard -> ShipOrder, mails, an
 * invoice. */
static int payments_handler(sb_delivery *dl, void *user)
{
    sb_demo *d = user;
    const sb_msg *m = sb_delivery_msg(dl);
    work(d, 50, 250);
    if (field_is(m, "card.last4", "0002")) {
        char msg[256];
        char *order = field(m, "orderId");
        snprintf(msg, sizeof msg,
                 "Card ending 0002 was declined by the issuer for order %s: "
                 "insufficient_funds (decline code 51)",
                 order ? order : "?");
        sb__free(order);
        sb_buf t;
        sb__buf_init(&t, PAYLOAD_MAX);
        sb__buf_printf(&t, "%s: %s\n%s", DECLINED_TYPE, msg,
                       DECLINED_TRACE_FRAMES);
        int rc = fail(dl, SB_ERROR, DECLINED_TYPE, msg, t.data);
        sb__buf_free(&t);
        return rc;
    }
    if (field_is(m, "customerId", deadlock_customer.id))
        return fail(dl, SB_BUSY, SQL_TYPE, SQL_MESSAGE, SQL_TRACE_PAYMENTS);
    sb_bus *bus = d->bus;
    const char *from = endpoint_names[EP_BILLING];
    sb_error err;
    sb_buf b;
    sb__buf_init(&b, PAYLOAD_MAX);
    /* ShipOrder waits for the next courier pickup: delayed messages. */
    sb__buf_puts(&b, "{");
    copy_field(&b, m, "orderId", "orderId", 1);
    copy_field(&b, m, "customerId", "customerId", 0);
    sb__buf_puts(&b, ",\"address\":{");
    copy_field(&b, m, "city", "shipTo.city", 1);
    copy_field(&b, m, "country", "shipTo.country", 0);
    sb__buf_printf(&b, "},\"carrier\":\"ExpressParcel\",\"parcels\":%d}",
                   (int)rnd_range(d, RNG_HANDLERS, 1, 3));
    demo_send ship = {
        QUEUE_SHIPPING, "Shop.Messages.Commands.ShipOrder",     "Send", from, m,
        NULL,           rnd_range(d, RNG_HANDLERS, 3000, 30000)};
    int rc = send_msg(d, bus, &ship, &b, &err);
    if (rc == SB_OK) {
        sb__buf_reset(&b);
        sb__buf_puts(&b, "{");
        copy_field(&b, m, "orderId", "orderId", 1);
        copy_field(&b, m, "to", "customerEmail", 0);
        put_str(&b, "template", "order-confirmation", 0);
        put_str(&b, "locale", "en-GB", 0);
        sb__buf_puts(&b, "}");
        demo_send mail = {QUEUE_EMAILS,
                          "Shop.Messages.Commands.SendOrderConfirmation",
                          "Send",
                          from,
                          m,
                          NULL,
                          0};
        rc = send_msg(d, bus, &mail, &b, &err);
    }
    if (rc == SB_OK && rnd(d, RNG_HANDLERS) % 4 == 0) {
        /* A review reminder, minutes later. */
        sb__buf_reset(&b);
        sb__buf_puts(&b, "{");
        copy_field(&b, m, "orderId", "orderId", 1);
        copy_field(&b, m, "to", "customerEmail", 0);
        put_str(&b, "template", "review-reminder", 0);
        put_str(&b, "locale", "en-GB", 0);
        sb__buf_puts(&b, "}");
        demo_send mail = {QUEUE_EMAILS,
                          "Shop.Messages.Commands.SendReviewReminder",
                          "Send",
                          from,
                          m,
                          NULL,
                          rnd_range(d, RNG_HANDLERS, 60000, 180000)};
        rc = send_msg(d, bus, &mail, &b, &err);
    }
    pthread_mutex_lock(&d->mu);
    int invoice = d->invoices_open;
    pthread_mutex_unlock(&d->mu);
    if (rc == SB_OK && invoice) {
        /* Shop.Accounting is offline: demo.invoices only fills. */
        sb__buf_reset(&b);
        sb__buf_puts(&b, "{");
        copy_field(&b, m, "orderId", "orderId", 1);
        copy_field(&b, m, "customerId", "customerId", 0);
        sb__buf_puts(&b, ",\"amount\":{");
        copy_field(&b, m, "value", "amount.value", 1);
        copy_field(&b, m, "currency", "amount.currency", 0);
        sb__buf_puts(&b, "},\"vatRate\":\"0.19\"}");
        demo_send inv = {QUEUE_INVOICES,
                         "Shop.Messages.Events.PaymentAccepted",
                         "Publish",
                         from,
                         m,
                         NULL,
                         0};
        rc = send_msg(d, bus, &inv, &b, &err);
    }
    sb__buf_free(&b);
    return rc;
}

/* demo.shipping (Shop.Shipping): a slow carrier API. */
static int shipping_handler(sb_delivery *dl, void *user)
{
    sb_demo *d = user;
    const sb_msg *m = sb_delivery_msg(dl);
    work(d, 200, 900);
    if (field_is(m, "address.country", carrier_customer.country)) {
        const char *msg = "ExpressParcel rejected the booking (HTTP 422): a "
                          "customs declaration (CN23) is required for "
                          "destination NO";
        sb_buf t;
        sb__buf_init(&t, PAYLOAD_MAX);
        sb__buf_printf(&t, "%s: %s\n%s", CARRIER_TYPE, msg,
                       CARRIER_TRACE_FRAMES);
        int rc = fail(dl, SB_ERROR, CARRIER_TYPE, msg, t.data);
        sb__buf_free(&t);
        return rc;
    }
    return SB_OK;
}

/* demo.emails (Shop.Notifications): SMTP. */
static int emails_handler(sb_delivery *dl, void *user)
{
    sb_demo *d = user;
    const sb_msg *m = sb_delivery_msg(dl);
    work(d, 20, 80);
    char *to = field(m, "to");
    size_t n = to ? strlen(to) : 0, k = strlen(".invalid");
    int bad = n > k && strcmp(to + n - k, ".invalid") == 0;
    int rc = SB_OK;
    if (bad) {
        char msg[512];
        snprintf(msg, sizeof msg,
                 "Mailbox unavailable. The server response was: 5.1.1 <%s>: "
                 "Recipient address rejected: User unknown in virtual "
                 "mailbox table",
                 to);
        sb_buf t;
        sb__buf_init(&t, PAYLOAD_MAX);
        sb__buf_printf(&t, "%s: %s\n%s", SMTP_TYPE, msg, SMTP_TRACE_FRAMES);
        rc = fail(dl, SB_ERROR, SMTP_TYPE, msg, t.data);
        sb__buf_free(&t);
    }
    sb__free(to);
    return rc;
}

/* demo.reports (Shop.Reporting): a request job with progress replies. */
static int reports_handler(sb_delivery *dl, void *user)
{
    sb_demo *d = user;
    const sb_msg *m = sb_delivery_msg(dl);
    char *report = field(m, "reportId");
    int failing = field_is(m, "kind", FAILING_REPORT);
    int steps = (int)rnd_range(d, RNG_HANDLERS, 3, 4);
    sb_buf b;
    sb__buf_init(&b, PAYLOAD_MAX);
    sb_error err;
    int rc = SB_OK;
    for (int i = 1; i <= steps && rc == SB_OK; i++) {
        work(d, 600, 1400);
        if (failing && i == 2) {
            rc = fail(dl, SB_ERROR, REPORT_TYPE, REPORT_MESSAGE, REPORT_TRACE);
            break;
        }
        if (i == steps)
            break;
        sb__buf_reset(&b);
        sb__buf_puts(&b, "{");
        put_str(&b, "reportId", report, 1);
        sb__buf_printf(&b, ",\"status\":\"running\",\"percent\":%d}",
                       100 * i / steps);
        /* A progress reply nobody waits for any more goes to recovery:
         * not an error of the job. */
        if (!b.failed)
            sb_delivery_progress(dl, b.data, b.len, &err);
    }
    if (rc == SB_OK) {
        sb__buf_reset(&b);
        sb__buf_puts(&b, "{");
        put_str(&b, "reportId", report, 1);
        sb__buf_printf(&b,
                       ",\"status\":\"done\",\"rows\":%d,\"url\":"
                       "\"https://reports.shop.example/%s.csv\"}",
                       (int)rnd_range(d, RNG_HANDLERS, 40, 4000),
                       report ? report : "x");
        rc = b.failed ? b.failed : sb_delivery_reply(dl, b.data, b.len, &err);
    }
    sb__buf_free(&b);
    sb__free(report);
    return rc;
}

/* ---- the publisher: orders at the configured rate ---- */

static const customer *pick_customer(sb_demo *d, int scenario)
{
    switch (scenario) {
    case S_DEADLOCK: return &deadlock_customer;
    case S_MAILBOX: return &mailbox_customer;
    case S_CARRIER: return &carrier_customer;
    default: return &customers[rnd(d, RNG_PUBLISHER) % N_CUSTOMERS];
    }
}

static int next_scenario(sb_demo *d, int64_t n)
{
    if (n < (int64_t)N_OPENING)
        return opening[n];
    int r = (int)(rnd(d, RNG_PUBLISHER) % 100);
    return r < 4    ? S_INVENTORY_TIMEOUT
           : r < 10 ? S_CARD_DECLINED
           : r < 13 ? S_DEADLOCK
           : r < 16 ? S_MAILBOX
           : r < 18 ? S_CARRIER
                    : S_OK;
}

static int publish_order(sb_demo *d, int64_t n, sb_error *err)
{
    int scenario = next_scenario(d, n);
    const customer *c = pick_customer(d, scenario);
    char order[32], placed[48];
    snprintf(order, sizeof order, "ORD-%08lld", (long long)(d->order_base + n));
    format_time(placed, sizeof placed, sb__wall_us(), 0);
    sb_buf b;
    sb__buf_init(&b, PAYLOAD_MAX);
    sb__buf_puts(&b, "{");
    put_str(&b, "orderId", order, 1);
    sb__buf_puts(&b, ",\"customer\":{");
    put_str(&b, "id", c->id, 1);
    put_str(&b, "name", c->name, 0);
    put_str(&b, "email", c->email, 0);
    put_str(&b, "city", c->city, 0);
    put_str(&b, "country", c->country, 0);
    sb__buf_puts(&b, "},\"lines\":[");
    int lines = (int)rnd_range(d, RNG_PUBLISHER, 1, 3), total = 0;
    for (int i = 0; i < lines; i++) {
        const product *p = scenario == S_INVENTORY_TIMEOUT && i == 0
                               ? &timeout_product
                               : &products[rnd(d, RNG_PUBLISHER) % N_PRODUCTS];
        int qty = (int)rnd_range(d, RNG_PUBLISHER, 1, 3);
        total += qty * p->cents;
        sb__buf_printf(&b, "%s{", i ? "," : "");
        put_str(&b, "sku", p->sku, 1);
        put_str(&b, "name", p->name, 0);
        sb__buf_printf(&b, ",\"quantity\":%d,\"unitPrice\":\"%d.%02d\"}", qty,
                       p->cents / 100, p->cents % 100);
    }
    int card = (int)(rnd(d, RNG_PUBLISHER) % 3);
    sb__buf_printf(&b,
                   "],\"total\":{\"amount\":\"%d.%02d\",\"currency\":\"EUR\"},"
                   "\"payment\":{\"method\":\"card\",",
                   total / 100, total % 100);
    put_str(&b, "brand",
            scenario == S_CARD_DECLINED ? "VISA" : card_brands[card], 1);
    put_str(&b, "last4",
            scenario == S_CARD_DECLINED ? "0002" : card_last4[card], 0);
    sb__buf_puts(&b, "},");
    put_str(&b, "channel", rnd(d, RNG_PUBLISHER) % 3 ? "web" : "mobile-app", 1);
    put_str(&b, "placedAt", placed, 0);
    sb__buf_puts(&b, "}");
    demo_send s = {QUEUE_ORDERS,
                   "Shop.Messages.Commands.PlaceOrder",
                   "Send",
                   "Shop.Web",
                   NULL,
                   NULL,
                   0};
    int rc = send_msg(d, d->bus, &s, &b, err);
    sb__buf_free(&b);
    return rc;
}

/* demo.invoices has no consumer: keep it below its cap. */
static int check_invoices(sb_demo *d, sb_error *err)
{
    sb_queue_stats **qs = NULL;
    size_t n = 0;
    int rc = sb_queue_list(d->bus, &qs, &n, err);
    if (rc != SB_OK)
        return rc;
    int64_t held = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(qs[i]->queue, QUEUE_INVOICES) == 0)
            held = qs[i]->ready + qs[i]->delayed;
    sb_free(qs);
    pthread_mutex_lock(&d->mu);
    d->invoices_open = held < INVOICE_CAP;
    pthread_mutex_unlock(&d->mu);
    return SB_OK;
}

/* A database error is logged once per outage and retried with back-off;
 * returns the next wait in ms. */
static int64_t outage(sb_demo *d, const char *what, int rc, const sb_error *err,
                      int *down, int64_t *backoff)
{
    if (rc == SB_OK) {
        if (*down)
            say(d, SB_LOG_INFO, "%s works again", what);
        *down = 0;
        *backoff = BACKOFF_MIN_MS;
        return 0;
    }
    if (!*down)
        say(d, SB_LOG_ERROR, "%s failed, retrying with back-off: %s", what,
            err->message[0] ? err->message : sb_strerror(rc));
    *down = 1;
    int64_t wait = *backoff;
    *backoff = *backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : *backoff * 2;
    return wait;
}

static void *publisher_main(void *arg)
{
    sb_demo *d = arg;
    int64_t n = 0, backoff = BACKOFF_MIN_MS;
    int down = 0;
    int64_t next_check = 0;
    for (;;) {
        sb_error err;
        sb_error_clear(&err);
        int rc = SB_OK;
        if (sb__mono_us() >= next_check) {
            rc = check_invoices(d, &err);
            if (rc == SB_OK)
                next_check = sb__mono_us() + 5000000;
        }
        if (rc == SB_OK)
            rc = publish_order(d, n, &err);
        int64_t wait =
            outage(d, "publishing orders", rc, &err, &down, &backoff);
        if (rc == SB_OK) {
            n++;
            count(d, &d->orders);
            wait = rnd_range(d, RNG_PUBLISHER, d->order_period_us / 2,
                             d->order_period_us * 3 / 2) /
                   1000;
        }
        if (nap(d, wait))
            return NULL;
    }
}

/* ---- the requester: reports over the channel ---- */

/* C2: progress until a reply says "status": "done". */
static int until_done(const sb_reply *r, void *user)
{
    (void)user;
    size_t len = 0;
    const void *data = sb_reply_data(r, &len);
    const char *path = "status";
    char *status = NULL;
    if (sb__json_extract_text(data, len, &path, 1, PAYLOAD_MAX, &status,
                              NULL) != SB_OK)
        return 0;
    int done = strcmp(status, "done") == 0;
    sb__free(status);
    return done;
}

typedef struct report_trigger {
    sb_demo *d;
    const sb_buf *payload;
} report_trigger;

/* C1: runs once the waiter and its recovery registration are stored. */
static int send_report_job(const char *correlation_id, void *user)
{
    report_trigger *t = user;
    demo_send s = {QUEUE_REPORTS,
                   "Shop.Messages.Commands.GenerateReport",
                   "Send",
                   "Shop.Backoffice",
                   NULL,
                   correlation_id,
                   0};
    sb_error err;
    return send_msg(t->d, t->d->bus, &s, t->payload, &err);
}

static int start_report(sb_demo *d, demo_request *slot, int64_t n,
                        sb_error *err)
{
    /* The second report finds no data (an error reply), then one in ten;
     * the fourth one's requester gives up after 1.5 s, then one in ten. */
    int failing = n == 1 || (n > 4 && rnd(d, RNG_REQUESTER) % 10 == 0);
    size_t k = n < 4 ? (size_t)n % 3 : (size_t)(rnd(d, RNG_REQUESTER) % 3);
    const char *kind = failing ? FAILING_REPORT : report_kinds[k];
    int impatient = n == 3 || (n > 4 && rnd(d, RNG_REQUESTER) % 10 == 0);
    char from[48], to[48];
    int64_t now = sb__wall_us();
    format_time(from, sizeof from, now - 86400LL * 1000000, 0);
    format_time(to, sizeof to, now, 0);
    snprintf(slot->report_id, sizeof slot->report_id, "RPT-%06lld",
             (long long)(n + 500100));
    sb_buf b;
    sb__buf_init(&b, PAYLOAD_MAX);
    sb__buf_puts(&b, "{");
    put_str(&b, "reportId", slot->report_id, 1);
    put_str(&b, "kind", kind, 0);
    put_str(&b, "from", from, 0);
    put_str(&b, "to", to, 0);
    put_str(&b, "format", "csv", 0);
    put_str(&b, "requestedBy", "backoffice@shop.example", 0);
    sb__buf_puts(&b, "}");
    if (b.failed) {
        sb__buf_free(&b);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    sb_wait_options wo;
    memset(&wo, 0, sizeof wo);
    wo.size = sizeof wo;
    wo.timeout_ms = impatient ? 1500 : 30000;
    wo.until = until_done;
    wo.recovery_handler = RECOVERY_HANDLER;
    wo.recovery_context = slot->report_id;
    wo.recovery_context_len = strlen(slot->report_id);
    report_trigger t = {d, &b};
    slot->progress = 0;
    int rc = sb_request(d->ch, &wo, send_report_job, &t, &slot->w, err);
    sb__buf_free(&b);
    if (rc == SB_OK)
        count(d, &d->requests);
    return rc;
}

/* Take what arrived for one request; free it once it has its outcome. */
static void poll_report(sb_demo *d, demo_request *slot)
{
    for (;;) {
        sb_reply *r = NULL;
        sb_error err;
        int rc = sb_waiter_take(slot->w, &r, &err);
        if (rc == SB_EMPTY)
            return;
        if (!sb_waiter_done(slot->w)) {
            sb_reply_free(r);
            if (rc != SB_OK)
                return;
            slot->progress++;
            continue;
        }
        pthread_mutex_lock(&d->mu);
        int first = 0;
        if (rc == SB_OK) {
            d->replies++;
            first = !d->said_reply;
            d->said_reply = 1;
        } else if (rc == SB_REPLY_ERROR) {
            d->error_replies++;
            first = !d->said_error_reply;
            d->said_error_reply = 1;
        } else if (rc == SB_TIMEOUT) {
            d->timeouts++;
        }
        pthread_mutex_unlock(&d->mu);
        if (first && rc == SB_OK)
            say(d, SB_LOG_INFO,
                "first report delivered over the channel: %s, %d progress "
                "replies, then done",
                slot->report_id, slot->progress);
        else if (first)
            say(d, SB_LOG_INFO,
                "first error reply over the channel: %s failed with %s",
                slot->report_id,
                r && sb_reply_error_type(r) ? sb_reply_error_type(r) : "?");
        sb_reply_free(r);
        sb_waiter_free(slot->w);
        slot->w = NULL;
        return;
    }
}

static void *requester_main(void *arg)
{
    sb_demo *d = arg;
    int64_t n = 0, backoff = BACKOFF_MIN_MS;
    int down = 0;
    int64_t next = sb__mono_us() + 1500000;
    while (!nap(d, 100)) {
        for (int i = 0; i < MAX_REQUESTS; i++)
            if (d->req[i].w != NULL)
                poll_report(d, &d->req[i]);
        if (sb__mono_us() < next)
            continue;
        demo_request *slot = NULL;
        for (int i = 0; i < MAX_REQUESTS && slot == NULL; i++)
            if (d->req[i].w == NULL)
                slot = &d->req[i];
        if (slot == NULL)
            continue;
        sb_error err;
        sb_error_clear(&err);
        int rc = start_report(d, slot, n, &err);
        int64_t wait =
            outage(d, "requesting reports", rc, &err, &down, &backoff);
        if (rc == SB_OK) {
            n++;
            wait = rnd_range(d, RNG_REQUESTER, 2500, 5000);
        }
        next = sb__mono_us() + wait * 1000;
    }
    for (int i = 0; i < MAX_REQUESTS; i++) {
        sb_waiter_free(d->req[i].w);
        d->req[i].w = NULL;
    }
    return NULL;
}

/* ---- recovery (C19-C21): a report whose requester went away ---- */

static int recovery_classify(const sb_reply *r, void *user)
{
    if (sb_reply_is_error(r))
        return SB_RECOVERY_FAIL;
    return until_done(r, user) ? SB_RECOVERY_RESUME : SB_RECOVERY_KEEP_WAITING;
}

static int recovery_resume(const sb_reply *r, const void *context,
                           size_t context_len, void *user)
{
    sb_demo *d = user;
    (void)r;
    count(d, &d->recovered);
    say(d, SB_LOG_INFO,
        "recovery: report %.*s finished after its requester was gone; "
        "filed for the back office",
        (int)context_len, context ? (const char *)context : "");
    return SB_OK;
}

static int recovery_fail(const sb_reply *r, const void *context,
                         size_t context_len, void *user)
{
    sb_demo *d = user;
    count(d, &d->recovered);
    say(d, SB_LOG_INFO,
        "recovery: report %.*s failed after its requester was gone: %s",
        (int)context_len, context ? (const char *)context : "",
        sb_reply_error_message(r) ? sb_reply_error_message(r) : "no detail");
    return SB_OK;
}

/* ---- start and stop ---- */

typedef struct worker_spec {
    const char *queue;
    sb_handler_fn fn;
    int concurrency;
    int max_attempts;
    int endpoint; /* the service that processes the queue (its dead
                     letters' endpoint) */
} worker_spec;

static const worker_spec worker_specs[N_WORKERS] = {
    {QUEUE_ORDERS, orders_handler, 2, 3, EP_SALES},
    {QUEUE_PAYMENTS, payments_handler, 2, 3, EP_BILLING},
    {QUEUE_SHIPPING, shipping_handler, 1, 3, EP_SHIPPING},
    {QUEUE_EMAILS, emails_handler, 1, 3, EP_NOTIFY},
    {QUEUE_REPORTS, reports_handler, 2, 2, EP_REPORTING},
};

static int start_parts(sb_demo *d, const sb_demo_options *o, sb_error *err)
{
    (void)o;
    int rc = SB_OK;
    sb_channel_options co;
    memset(&co, 0, sizeof co);
    co.size = sizeof co;
    co.instance_id = d->instance;
    /* Every waiter is in this process and gets its replies at once; a
     * reply racing a waiter that stops must not hold the stop for the
     * default 5 s. */
    co.confirmation_timeout_ms = 1000;
    if (rc == SB_OK)
        rc = sb_channel_open(d->bus, &co, &d->ch, err);
    if (rc == SB_OK) {
        sb_recovery_handler h;
        memset(&h, 0, sizeof h);
        h.size = sizeof h;
        h.name = RECOVERY_HANDLER;
        h.classify = recovery_classify;
        h.resume = recovery_resume;
        h.fail = recovery_fail;
        h.user = d;
        rc = sb_channel_add_recovery_handler(d->ch, &h, err);
    }
    for (int i = 0; rc == SB_OK && i < N_WORKERS; i++) {
        const worker_spec *s = &worker_specs[i];
        sb_worker_options wo;
        memset(&wo, 0, sizeof wo);
        wo.size = sizeof wo;
        wo.queue = s->queue;
        wo.handler = s->fn;
        wo.user = d;
        wo.concurrency = s->concurrency;
        wo.max_attempts = s->max_attempts;
        wo.redelivery_delay_ms = 1000;
        wo.max_poll_ms = 1000;
        wo.stop_timeout_ms = 2000;
        wo.endpoint = endpoint_names[s->endpoint];
        rc = sb_worker_start(d->bus, &wo, &d->workers[i], err);
        if (rc != SB_OK)
            d->workers[i] = NULL;
    }
    if (rc == SB_OK) {
        d->started_publisher =
            pthread_create(&d->publisher, NULL, publisher_main, d) == 0;
        d->started_requester =
            d->started_publisher &&
            pthread_create(&d->requester, NULL, requester_main, d) == 0;
        if (!d->started_requester)
            rc = sb__err(err, SB_NOMEM, NULL, "cannot start a thread");
    }
    return rc;
}

int sb__demo_start(sb_bus *bus, const sb_demo_options *opts, sb_demo **out,
                   sb_error *err)
{
    sb_error_clear(err);
    if (bus == NULL || opts == NULL || out == NULL)
        return sb__err(err, SB_INVALID, bus == NULL ? "bus" : "opts",
                       "arguments must not be NULL");
    *out = NULL;
    double rate = opts->rate == 0 ? DEFAULT_RATE : opts->rate;
    if (!(rate > 0 && rate <= MAX_RATE))
        return sb__err(err, SB_INVALID, "rate",
                       "rate must be more than 0 and at most %.0f messages "
                       "per second",
                       MAX_RATE);
    sb_demo *d = sb__calloc(1, sizeof *d);
    if (d == NULL)
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    d->bus = bus;
    d->log = opts->log;
    d->log_user = opts->log_user;
    uint64_t seed = opts->seed ? opts->seed : DEFAULT_SEED;
    for (int i = 0; i < N_RNG; i++)
        d->rng[i] = seed ^ (UINT64_C(0x632be59bd9b4e019) * ((uint64_t)i + 1));
    d->invoices_open = 1;
    /* Order numbers run ahead of the clock at ten a second, so a later
     * run on the same database never repeats one. */
    d->order_base = sb__wall_us() / 100000 % 100000000;
    d->order_period_us = (int64_t)(MSGS_PER_ORDER / rate * 1e6);
    if (d->order_period_us < 1000)
        d->order_period_us = 1000;
    if (gethostname(d->host, sizeof d->host) != 0 || d->host[0] == '\0')
        memcpy(d->host, "localhost", sizeof "localhost");
    d->host[sizeof d->host - 1] = '\0';
    snprintf(d->instance, sizeof d->instance, "%s@%s:%ld",
             endpoint_names[EP_REPORTING], d->host, (long)getpid());
    pthread_mutex_init(&d->mu, NULL);
    sb__cond_init_monotonic(&d->cv);
    int rc = start_parts(d, opts, err);
    if (rc != SB_OK) {
        d->log = NULL; /* no summary for a demo that never ran */
        sb__demo_stop(d);
        return rc;
    }
    say(d, SB_LOG_INFO,
        "a web shop at ~%.1f messages/s on %s, %s, %s, %s, %s "
        "(request/reply, recovery handler " RECOVERY_HANDLER ") and %s (no "
        "consumer, up to %d); failing messages get 3 attempts 1 s apart, "
        "then the dead-letter queue; writes into this database",
        rate, QUEUE_ORDERS, QUEUE_PAYMENTS, QUEUE_SHIPPING, QUEUE_EMAILS,
        QUEUE_REPORTS, QUEUE_INVOICES, INVOICE_CAP);
    *out = d;
    return SB_OK;
}

void sb__demo_stop(sb_demo *d)
{
    if (d == NULL)
        return;
    pthread_mutex_lock(&d->mu);
    d->stopping = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    if (d->started_publisher)
        pthread_join(d->publisher, NULL);
    if (d->started_requester)
        pthread_join(d->requester, NULL);
    sb_worker_stats total;
    memset(&total, 0, sizeof total);
    for (int i = 0; i < N_WORKERS; i++) {
        if (d->workers[i] == NULL)
            continue;
        sb_worker_stop(d->workers[i], NULL);
        sb_worker_stats s;
        sb_worker_get_stats(d->workers[i], &s);
        total.acked += s.acked;
        total.naked += s.naked;
        total.dead_lettered += s.dead_lettered;
    }
    for (int i = 0; i < N_WORKERS; i++)
        sb_worker_free(d->workers[i]);
    sb_channel_close(d->ch);
    say(d, SB_LOG_INFO,
        "stopped: %lld orders, %lld messages handled, %lld attempts "
        "failed and retried, %lld dead-lettered; %lld reports requested: "
        "%lld done, %lld error replies, %lld given up; %lld recovered",
        (long long)d->orders, (long long)total.acked, (long long)total.naked,
        (long long)total.dead_lettered, (long long)d->requests,
        (long long)d->replies, (long long)d->error_replies,
        (long long)d->timeouts, (long long)d->recovered);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    sb__free(d);
}
