/* progress.c - a one-line progress bar on stderr, drawn only when stderr
 * is a terminal (scripts get a summary line from the command instead). */
#include "cli.h"

#include <string.h>
#include <unistd.h>

#define BAR_WIDTH 30
#define REDRAW_US 100000

/* Start a progress bar (drawn only on a terminal and without -q). */
void cli_progress_begin(cli_progress *p, const cli_ctx *ctx, const char *label,
                        int64_t total)
{
    memset(p, 0, sizeof *p);
    p->enabled = ctx->verbosity >= 0 && isatty(STDERR_FILENO);
    p->label = label;
    p->total = total;
    p->start_us = sb__mono_us();
}

static void draw(cli_progress *p, int64_t now)
{
    double secs = (double)(now - p->start_us) / 1e6;
    double rate = secs > 0.05 ? (double)p->done / secs : 0.0;
    char bar[BAR_WIDTH + 1];
    if (p->total > 0) {
        int64_t done = p->done > p->total ? p->total : p->done;
        int fill = (int)(done * BAR_WIDTH / p->total);
        memset(bar, '#', (size_t)fill);
        memset(bar + fill, '.', (size_t)(BAR_WIDTH - fill));
        bar[BAR_WIDTH] = '\0';
        fprintf(stderr, "\r%s [%s] %3d%% %lld/%lld %.0f/s\033[K", p->label, bar,
                (int)(done * 100 / p->total), (long long)p->done,
                (long long)p->total, rate);
    } else {
        fprintf(stderr, "\r%s %lld %.0f/s\033[K", p->label, (long long)p->done,
                rate);
    }
    fflush(stderr);
    p->drawn = 1;
    p->last_draw_us = now;
}

/* Record progress; redraws at most every 100 ms. */
void cli_progress_update(cli_progress *p, int64_t done, int64_t total)
{
    p->done = done;
    if (total >= 0)
        p->total = total;
    if (!p->enabled)
        return;
    int64_t now = sb__mono_us();
    if (p->drawn && now - p->last_draw_us < REDRAW_US)
        return;
    draw(p, now);
}

/* Draw the final state and end the line, if a bar was shown. */
void cli_progress_end(cli_progress *p)
{
    if (!p->enabled || (!p->drawn && p->done == 0))
        return;
    draw(p, sb__mono_us());
    fputc('\n', stderr);
}

/* sb_progress_fn adapter: `user` is a cli_progress. */
void cli_progress_cb(int64_t done, int64_t total, void *user)
{
    cli_progress_update(user, done, total);
}
