/* progress.c: the terminal progress bar of cask-knn. A thread of the app (not of the
 * runtime) wakes every 200 ms, reads the graph's count of finished tasks (an atomic
 * counter, safe to read while the graph runs) and redraws one line with \r. */
#include "progress.h"
#include "knn_clock.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct knn_progress {
    const cask_graph *g;
    FILE *tty;
    const char *label;
    double delay_s;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop, drawn;
};

static void draw(knn_progress *p, double elapsed)
{
    cask_graph_info info;
    if (cask_graph_query(p->g, &info) || info.ntasks == 0)
        return;
    enum { WIDTH = 30 };
    double frac = (double)info.ntasks_run / (double)info.ntasks;
    int full = (int)(frac * WIDTH);
    char bar[WIDTH + 1];
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < full ? '#' : '.';
    bar[WIDTH] = '\0';
    fprintf(p->tty, "\r%s [%s] %3d%%  %zu/%zu tasks  %.1f s", p->label, bar,
            (int)(100 * frac), info.ntasks_run, info.ntasks, elapsed);
    fflush(p->tty);
    p->drawn = 1;
}

static void *run(void *arg)
{
    knn_progress *p = arg;
    double t0 = knn_now_s();
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&p->cond, &p->lock, &ts);
        double el = knn_now_s() - t0;
        if (!p->stop && el >= p->delay_s)
            draw(p, el);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

knn_progress *knn_progress_start(const cask_graph *g, FILE *tty, const char *label,
                                 double delay_s)
{
    if (!tty || !isatty(fileno(tty)))
        return NULL;
    knn_progress *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->g = g;
    p->tty = tty;
    p->label = label;
    p->delay_s = delay_s;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    if (pthread_create(&p->thread, NULL, run, p) != 0) {
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
    }
    return p;
}

void knn_progress_stop(knn_progress *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    if (p->drawn) {
        fprintf(p->tty, "\r\033[K");
        fflush(p->tty);
    }
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
