/* common.c - what the benchmark programs share: clocks, logging, JSON
 * output and the log-linear latency histogram. */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#ifndef SB_BENCH_NO_SQLBUS
#include "sqlbus.h"
#endif

int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void sleep_ns(int64_t ns)
{
    if (ns <= 0)
        return;
    struct timespec ts = {(time_t)(ns / 1000000000LL),
                          (long)(ns % 1000000000LL)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

void bench_logf(const char *prog, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Print a JSON string literal (escaping what JSON requires). */
void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void fail_json(const char *scenario, const char *msg)
{
    printf("{\"scenario\":");
    json_str(stdout, scenario);
    printf(",\"ok\":false,\"error\":");
    json_str(stdout, msg);
    printf("}\n");
    fflush(stdout);
}

#ifndef SB_BENCH_NO_SQLBUS
void bench_log(int level, const char *component, const char *message,
               void *user)
{
    (void)user;
    if (level >= SB_LOG_WARN)
        fprintf(stderr, "sqlbus[%d] %s: %s\n", level, component, message);
}
#endif

/* ------------------------------------------------------------------ */
/* log-linear histogram (ns): 2^k buckets split into 32 linear steps,    */
/* so every recorded value is within ~3% of its bucket bound.            */
/* ------------------------------------------------------------------ */

static int hist_index(int64_t v)
{
    if (v < 0)
        v = 0;
    uint64_t u = (uint64_t)v;
    if (u < H_SUB)
        return (int)u;
    int e = 63 - __builtin_clzll(u);
    int shift = e - H_SUB_BITS;
    int sub = (int)((u >> shift) & (H_SUB - 1));
    return (shift + 1) * H_SUB + sub;
}

static int64_t hist_bucket_high(int idx)
{
    if (idx < H_SUB)
        return idx;
    int shift = idx / H_SUB - 1;
    int sub = idx % H_SUB;
    uint64_t base = ((uint64_t)H_SUB + (uint64_t)sub) << shift;
    return (int64_t)(base + ((1ULL << shift) - 1));
}

void hist_init(hist *h)
{
    memset(h, 0, sizeof *h);
    h->min = INT64_MAX;
}

void hist_add(hist *h, int64_t v)
{
    if (v < 0)
        v = 0;
    h->count[hist_index(v)]++;
    h->n++;
    h->sum += (double)v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

void hist_merge(hist *into, const hist *h)
{
    for (int i = 0; i < H_BUCKETS; i++)
        into->count[i] += h->count[i];
    into->n += h->n;
    into->sum += h->sum;
    if (h->min < into->min)
        into->min = h->min;
    if (h->max > into->max)
        into->max = h->max;
}

int64_t hist_pct(const hist *h, double p)
{
    if (h->n == 0)
        return 0;
    uint64_t rank = (uint64_t)(p / 100.0 * (double)h->n + 0.5);
    if (rank < 1)
        rank = 1;
    if (rank > h->n)
        rank = h->n;
    uint64_t acc = 0;
    for (int i = 0; i < H_BUCKETS; i++) {
        acc += h->count[i];
        if (acc >= rank) {
            int64_t hi = hist_bucket_high(i);
            return hi > h->max ? h->max : hi;
        }
    }
    return h->max;
}

/* Print `"NAME_p50_us":..,"NAME_p90_us":..,...` (no leading comma). */
void hist_json(const char *name, const hist *h)
{
    printf("\"%s_p50_us\":%.1f,\"%s_p90_us\":%.1f,\"%s_p99_us\":%.1f,"
           "\"%s_max_us\":%.1f,\"%s_mean_us\":%.1f,\"%s_min_us\":%.1f",
           name, (double)hist_pct(h, 50) / 1e3, name,
           (double)hist_pct(h, 90) / 1e3, name, (double)hist_pct(h, 99) / 1e3,
           name, (double)h->max / 1e3, name,
           h->n ? h->sum / (double)h->n / 1e3 : 0.0, name,
           h->n ? (double)h->min / 1e3 : 0.0);
}
