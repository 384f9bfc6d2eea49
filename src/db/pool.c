/* pool.c - a bounded pool of connections shared by the threads of a bus.
 * Connections open lazily; a broken one is closed instead of kept, so the
 * next acquire reconnects (that is how an outage heals). */
#include "db/db.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

struct sb_pool {
    const sb_driver *drv;
    sb_db_config cfg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_mutex_t write_mu; /* SQLite: one writer of this pool at a time */
    sb_conn **idle;
    int n_idle;
    int n_open; /* idle + lent out */
    int max;
};

int sb__pool_new(sb_db_config *cfg, int max, sb_pool **out, sb_error *err)
{
    *out = NULL;
    const sb_driver *drv = sb__driver_for(cfg);
    if (drv == NULL)
        return sb__err(err, SB_INVALID, "url", "no driver for this URL");
    if (max < 1)
        max = 1;
    sb_pool *p = sb__calloc(1, sizeof *p);
    sb_conn **idle = sb__calloc((size_t)max, sizeof *idle);
    if (p == NULL || idle == NULL) {
        sb__free(p);
        sb__free(idle);
        return sb__err(err, SB_NOMEM, NULL, "out of memory");
    }
    p->drv = drv;
    p->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    p->idle = idle;
    p->max = max;
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->write_mu, NULL);
    sb__cond_init_monotonic(&p->cv);
    *out = p;
    return SB_OK;
}

void sb__pool_free(sb_pool *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < p->n_idle; i++)
        p->drv->close(p->idle[i]);
    sb__free(p->idle);
    sb__db_config_free(&p->cfg);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->write_mu);
    pthread_cond_destroy(&p->cv);
    sb__free(p);
}

const sb_db_config *sb__pool_config(const sb_pool *p)
{
    return &p->cfg;
}

int sb__pool_acquire(sb_pool *p, int64_t timeout_ms, sb_conn **out,
                     sb_error *err)
{
    *out = NULL;
    int64_t deadline = sb__mono_us() + timeout_ms * 1000;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->n_idle > 0) {
            *out = p->idle[--p->n_idle];
            pthread_mutex_unlock(&p->mu);
            return SB_OK;
        }
        if (p->n_open < p->max) {
            p->n_open++;
            pthread_mutex_unlock(&p->mu);
            int rc = p->drv->connect(&p->cfg, out, err);
            if (rc != SB_OK) {
                pthread_mutex_lock(&p->mu);
                p->n_open--;
                pthread_cond_signal(&p->cv);
                pthread_mutex_unlock(&p->mu);
            }
            return rc;
        }
        if (sb__mono_us() >= deadline) {
            pthread_mutex_unlock(&p->mu);
            return sb__err(err, SB_BUSY, NULL,
                           "all %d pooled connections are in use", p->max);
        }
        sb__cond_wait_until(&p->cv, &p->mu, deadline);
    }
}

void sb__pool_release(sb_pool *p, sb_conn *c)
{
    if (c == NULL)
        return;
    if (c->in_tx)
        sb__rollback(c);
    bool drop = c->drv->broken(c) || c->in_tx;
    pthread_mutex_lock(&p->mu);
    if (drop || p->n_idle >= p->max) {
        p->n_open--;
        pthread_mutex_unlock(&p->mu);
        c->drv->close(c);
        pthread_mutex_lock(&p->mu);
    } else {
        p->idle[p->n_idle++] = c;
    }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void sb__pool_write_lock(sb_pool *p)
{
    if (p->drv->dialect == SB_DIALECT_SQLITE)
        pthread_mutex_lock(&p->write_mu);
}

void sb__pool_write_unlock(sb_pool *p)
{
    if (p->drv->dialect == SB_DIALECT_SQLITE)
        pthread_mutex_unlock(&p->write_mu);
}
