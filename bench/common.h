/* common.h - helpers shared by bench/sb_bench.c and
 * bench/sb_channel_bench.c (see common.c). */
#ifndef SB_BENCH_COMMON_H
#define SB_BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>

int64_t mono_ns(void);
void sleep_ns(int64_t ns);
/* A line on stderr prefixed with the program's name (BENCH_NAME). */
void bench_logf(const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#define logf_(...) bench_logf(BENCH_NAME, __VA_ARGS__)
/* A JSON string literal, escaped. */
void json_str(FILE *f, const char *s);
/* `{"scenario":..,"ok":false,"error":..}` on stdout. */
void fail_json(const char *scenario, const char *msg);
#ifndef SB_BENCH_NO_SQLBUS
/* sb_log_fn: warnings and errors of the library to stderr. */
void bench_log(int level, const char *component, const char *message,
               void *user);
#endif

#define H_SUB_BITS 5
#define H_SUB (1 << H_SUB_BITS)
#define H_BUCKETS (64 * H_SUB)

typedef struct hist {
    uint64_t count[H_BUCKETS];
    uint64_t n;
    int64_t min, max;
    double sum;
} hist;

void hist_init(hist *h);
void hist_add(hist *h, int64_t v);
void hist_merge(hist *into, const hist *h);
/* The p-th percentile (ns), at most the largest value recorded. */
int64_t hist_pct(const hist *h, double p);
/* Print `"NAME_p50_us":..,"NAME_p90_us":..,...` (no leading comma). */
void hist_json(const char *name, const hist *h);

#endif
