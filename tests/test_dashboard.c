/* tests/test_dashboard.c: the live dashboard's server (runtime/dashboard.c) during a run:
 * /api/status and /api/stream parse as strict JSON and show the run, /metrics follows
 * the Prometheus text format, only GET is served, and clients that send garbage or never
 * read do not stop it. Plain sockets on 127.0.0.1; the server picks its port. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "cask/cask.h"
#include "json_strict.h"

static cask_runtime *rt;
static cask_graph *graph;
static pthread_t runner;
static atomic_int stop_run;
static int port;

static cask_status nap(cask_task_ctx *ctx)
{
    (void)ctx;
    struct timespec ts = { 0, 2000000 };
    nanosleep(&ts, NULL);
    return CASK_OK;
}

static cask_status fail_always(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "planted failure");
}

/* Computes a graph of 200 naps again and again until told to stop. */
static void *run_graphs(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_run))
        cr_assert_eq(cask_graph_compute(graph), CASK_OK);
    return NULL;
}

static void start(void)
{
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_DASHBOARD | CASK_CONFIG_LOG_LEVEL,
                        .ncpu = 2, .dashboard = "127.0.0.1:0", .log_level = CASK_LOG_ERROR };
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    char url[128];
    cr_assert_eq(cask_dashboard_url(rt, url, sizeof url), CASK_OK);
    cr_assert_eq(sscanf(url, "http://127.0.0.1:%d/", &port), 1, "url %s", url);
    cask_kernel *k;
    cask_kernel_desc kd = { .name = "nap", .cpu = nap };
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    cr_assert_eq(cask_graph_create(rt, &graph), CASK_OK);
    for (int i = 0; i < 200; i++) {
        cask_task_desc td = { .kernel = k };
        cr_assert_eq(cask_graph_add_task(graph, &td, NULL), CASK_OK);
    }
    atomic_store(&stop_run, 0);
    cr_assert_eq(pthread_create(&runner, NULL, run_graphs, NULL), 0);
}

static void stop(void)
{
    atomic_store(&stop_run, 1);
    pthread_join(runner, NULL);
    cask_graph_destroy(graph);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

static int connect_server(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* Sends req whole and reads the reply until the server closes (or 10 s pass). */
static char *exchange(const char *req, size_t len)
{
    int fd = connect_server();
    cr_assert_eq(write(fd, req, len), (ssize_t)len);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        struct pollfd p = { fd, POLLIN, 0 };
        cr_assert_gt(poll(&p, 1, 10000), 0, "no reply within 10 s");
        if (n + 4096 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    buf[n] = 0;
    close(fd);
    return buf;
}

/* GET path: status code in *code, the body (malloc'ed). */
static char *get(const char *path, int *code)
{
    char req[256];
    int len = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    char *reply = exchange(req, (size_t)len);
    cr_assert_eq(sscanf(reply, "HTTP/1.1 %d", code), 1, "reply: %.200s", reply);
    char *body = strstr(reply, "\r\n\r\n");
    cr_assert_not_null(body);
    char *out = strdup(body + 4);
    free(reply);
    return out;
}

static void parse(const char *text, jval *v)
{
    const char *err;
    size_t at;
    cr_assert_eq(json_parse(text, strlen(text), v, &err, &at), 0, "bad JSON (%s at %zu): %.300s",
                 err, at, text);
}

static double num(const jval *o, const char *key)
{
    const jval *v = json_get(o, key);
    cr_assert(v && v->t == J_NUM, "no number %s", key);
    return v->num;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

TestSuite(dashboard, .init = start, .fini = stop, .timeout = 60);

Test(dashboard, status_is_json_that_shows_the_run_and_moves)
{
    int code;
    jval a, b;
    sleep_ms(300);
    char *t = get("/api/status", &code);
    cr_assert_eq(code, 200);
    parse(t, &a);
    const jval *workers = json_get(&a, "workers");
    cr_assert(workers && workers->t == J_ARR && workers->n == 2);
    const jval *lanes = json_get(&a, "lanes");
    cr_assert(lanes && lanes->t == J_ARR && lanes->n == 2);
    const jval *kernels = json_get(&a, "kernels");
    cr_assert(kernels && kernels->t == J_ARR && kernels->n >= 1);
    int found = 0;
    for (size_t i = 0; i < kernels->n; i++)
        found |= !strcmp(json_str(&kernels->items[i], "name"), "nap");
    cr_assert(found, "kernel nap not listed: %s", t);
    const jval *mem = json_get(&a, "memory");
    cr_assert(mem && mem->t == J_ARR && !strcmp(json_str(&mem->items[0], "node"), "host"));
    sleep_ms(400);
    char *u = get("/api/status", &code);
    parse(u, &b);
    double run_a = num(&json_get(&a, "workers")->items[0], "tasks_run") +
                   num(&json_get(&a, "workers")->items[1], "tasks_run");
    double run_b = num(&json_get(&b, "workers")->items[0], "tasks_run") +
                   num(&json_get(&b, "workers")->items[1], "tasks_run");
    cr_assert_gt(run_b, run_a, "tasks run did not move: %g then %g", run_a, run_b);
    cr_assert_gt(num(&b, "now_ns"), num(&a, "now_ns"));
    json_free(&a);
    json_free(&b);
    free(t);
    free(u);
}

Test(dashboard, graphs_in_progress_are_listed)
{
    int code, seen = 0;
    for (int i = 0; i < 50 && !seen; i++) {     /* between two computes none runs */
        jval a;
        char *t = get("/api/status", &code);
        parse(t, &a);
        const jval *graphs = json_get(&a, "graphs");
        cr_assert(graphs && graphs->t == J_ARR);
        if (graphs->n == 1) {
            cr_assert_eq(num(&graphs->items[0], "tasks"), 200);
            cr_assert_leq(num(&graphs->items[0], "done"), 200);
            seen = 1;
        }
        json_free(&a);
        free(t);
        sleep_ms(20);
    }
    cr_assert(seen, "no running graph seen in 50 looks");
}

Test(dashboard, stream_has_slices_once_someone_looks)
{
    int code;
    jval a;
    free(get("/api/stream?since=0", &code));    /* the first look starts the recording */
    sleep_ms(300);
    char *t = get("/api/stream?since=0", &code);
    cr_assert_eq(code, 200);
    parse(t, &a);
    const jval *sl = json_get(&a, "slices");
    cr_assert(sl && sl->t == J_ARR && sl->n > 0, "no slices: %.200s", t);
    for (size_t i = 0; i < sl->n; i++) {
        const jval *s = &sl->items[i];
        cr_assert(s->t == J_ARR && s->n == 5);
        cr_assert_lt(s->items[0].num, 2);                   /* lane: a CPU worker */
        cr_assert_leq(s->items[2].num, s->items[3].num);    /* t0 <= t1 */
        cr_assert_leq(s->items[3].num, num(&a, "now_ns"));
    }
    json_free(&a);
    free(t);
}

/* Prometheus text format 0.0.4: comment lines "# HELP name text" / "# TYPE name type",
 * samples "name{label="value",...} number"; names [a-zA-Z_:][a-zA-Z0-9_:]*; each
 * family's TYPE before its samples, once; counters named *_total. */
static const char *metric_name(const char *p, char *out, size_t len)
{
    size_t n = 0;
    if (!(isalpha((unsigned char)*p) || *p == '_' || *p == ':'))
        return NULL;
    while (isalnum((unsigned char)*p) || *p == '_' || *p == ':') {
        if (n + 1 < len)
            out[n++] = *p;
        p++;
    }
    out[n] = 0;
    return p;
}

Test(dashboard, metrics_follow_the_prometheus_text_format)
{
    int code;
    sleep_ms(200);
    char *t = get("/metrics", &code);
    cr_assert_eq(code, 200);
    char typed[64][96];
    char types[64][16];
    int ntyped = 0, samples = 0, nap_seen = 0;
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        char name[96];
        if (!strncmp(line, "# HELP ", 7)) {
            cr_assert_not_null(metric_name(line + 7, name, sizeof name), "%s", line);
            continue;
        }
        if (!strncmp(line, "# TYPE ", 7)) {
            const char *p = metric_name(line + 7, name, sizeof name);
            cr_assert(p && *p == ' ', "%s", line);
            for (int i = 0; i < ntyped; i++)
                cr_assert_str_neq(typed[i], name, "TYPE twice: %s", name);
            cr_assert(!strcmp(p + 1, "counter") || !strcmp(p + 1, "gauge"), "%s", line);
            cr_assert_lt(ntyped, 64);
            strcpy(typed[ntyped], name);
            strcpy(types[ntyped++], p + 1);
            if (!strcmp(p + 1, "counter"))
                cr_assert(strlen(name) > 6 && !strcmp(name + strlen(name) - 6, "_total"),
                          "counter %s not *_total", name);
            continue;
        }
        cr_assert_neq(line[0], '#', "unknown comment %s", line);
        const char *p = metric_name(line, name, sizeof name);
        cr_assert_not_null(p, "bad sample line %s", line);
        cr_assert(ntyped > 0 && !strcmp(typed[ntyped - 1], name), "sample %s outside its family", line);
        if (*p == '{') {
            p++;
            while (*p != '}') {
                char label[64];
                p = metric_name(p, label, sizeof label);
                cr_assert(p && p[0] == '=' && p[1] == '"', "bad label in %s", line);
                for (p += 2; *p != '"'; p++) {
                    cr_assert(*p, "unterminated label in %s", line);
                    if (*p == '\\')
                        p++;
                }
                p++;
                if (*p == ',')
                    p++;
                else
                    cr_assert_eq(*p, '}', "bad label list in %s", line);
            }
            p++;
        }
        cr_assert_eq(*p, ' ', "no value in %s", line);
        char *end;
        strtod(p + 1, &end);
        cr_assert(end != p + 1 && *end == 0, "bad value in %s", line);
        if (strstr(line, "cask_tasks_run_total{kernel=\"nap\"}"))
            nap_seen = strtod(p + 1, NULL) > 0;
        samples++;
    }
    cr_assert_gt(samples, 10);
    cr_assert(nap_seen, "cask_tasks_run_total for kernel nap missing or zero");
    free(t);
}

/* The value of the /metrics sample whose line starts with prefix ("name{labels} "). */
static double sample(const char *metrics, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = metrics; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, prefix, n))
            return strtod(p + n, NULL);
    cr_assert_fail("no sample %s in /metrics", prefix);
    return -1;
}

/* The runtime's pool of host chunk memory, as /api/status ("host_cache") and /metrics
 * show it, against cask_runtime_host_cache_stats: a 3 MiB chunk in use, then kept. */
Test(dashboard, host_pool_is_shown_in_status_and_metrics)
{
    cask_data *d;
    cr_assert_eq(cask_data_create(rt, (size_t)3 << 20, &d), CASK_OK);   /* no GPU: allocated now */
    cask_host_cache_stats want;
    cr_assert_eq(cask_runtime_host_cache_stats(rt, &want), CASK_OK);
    cr_assert_geq(want.pageable_live, (size_t)3 << 20);
    int code;
    jval a;
    char *t = get("/api/status", &code);
    cr_assert_eq(code, 200);
    parse(t, &a);
    const jval *h = json_get(&a, "host_cache");
    cr_assert(h && h->t == J_OBJ, "no host_cache object: %.300s", t);
    const jval *pg = json_get(h, "pageable"), *pn = json_get(h, "pinned");
    cr_assert(pg && pg->t == J_OBJ && pn && pn->t == J_OBJ, "no pageable/pinned in %.300s", t);
    cr_assert_eq(num(h, "limit"), (double)want.limit);
    cr_assert_gt(num(h, "limit"), 0);
    cr_assert_eq(num(pg, "live"), (double)want.pageable_live);
    cr_assert_eq(num(pg, "cached"), (double)want.pageable_cached);
    cr_assert_geq(num(pg, "peak"), num(pg, "live"));
    cr_assert_eq(num(pn, "live"), 0, "no GPU: nothing pinned");
    cr_assert_eq(num(pn, "cached"), 0);
    cr_assert_eq(num(pn, "peak"), 0);
    cr_assert_eq(num(h, "hits"), (double)want.hits);
    cr_assert_eq(num(h, "misses"), (double)want.misses);
    cr_assert_geq(num(h, "misses"), 1);
    json_free(&a);
    free(t);

    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_runtime_host_cache_stats(rt, &want), CASK_OK);
    cr_assert_geq(want.pageable_cached, (size_t)3 << 20);
    t = get("/metrics", &code);
    cr_assert_eq(code, 200);
    cr_assert_not_null(strstr(t, "# TYPE cask_host_cache_bytes gauge\n"), "%s", t);
    cr_assert_not_null(strstr(t, "# TYPE cask_host_cache_limit_bytes gauge\n"), "%s", t);
    cr_assert_not_null(strstr(t, "# TYPE cask_host_cache_requests_total counter\n"), "%s", t);
    cr_assert_eq(sample(t, "cask_host_cache_bytes{state=\"cached\",memory=\"pageable\"} "),
                 (double)want.pageable_cached);
    cr_assert_eq(sample(t, "cask_host_cache_bytes{state=\"live\",memory=\"pageable\"} "),
                 (double)want.pageable_live);
    cr_assert_eq(sample(t, "cask_host_cache_bytes{state=\"cached\",memory=\"pinned\"} "), 0);
    cr_assert_eq(sample(t, "cask_host_cache_bytes{state=\"live\",memory=\"pinned\"} "), 0);
    cr_assert_eq(sample(t, "cask_host_cache_limit_bytes "), (double)want.limit);
    cr_assert_eq(sample(t, "cask_host_cache_requests_total{result=\"hit\"} "), (double)want.hits);
    cr_assert_eq(sample(t, "cask_host_cache_requests_total{result=\"miss\"} "), (double)want.misses);
    free(t);
}

Test(dashboard, only_get_is_served)
{
    const char *post = "POST /api/status HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
    char *r = exchange(post, strlen(post));
    cr_assert(!strncmp(r, "HTTP/1.1 405", 12), "reply: %.100s", r);
    free(r);
    const char *del = "DELETE /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    r = exchange(del, strlen(del));
    cr_assert(!strncmp(r, "HTTP/1.1 405", 12), "reply: %.100s", r);
    free(r);
    int code;
    free(get("/nothing-here", &code));
    cr_assert_eq(code, 404);
}

Test(dashboard, survives_garbage_and_clients_that_never_read)
{
    /* garbage: random bytes, a request line without a version, a huge header */
    unsigned seed = 7;
    char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)rand_r(&seed);
    free(exchange(junk, sizeof junk));
    free(exchange("GET\r\n\r\n", 7));
    char *big = malloc(100000);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    memset(big + 19, 'a', 100000 - 19);
    free(exchange(big, 100000));
    free(big);
    /* every connection slot taken by clients that ask for /metrics and never read, or
     * connect and say nothing: the server times them out and answers again */
    int fds[16];
    for (int i = 0; i < 16; i++) {
        fds[i] = connect_server();
        if (i % 2) {
            const char *req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
            cr_assert_eq(write(fds[i], req, strlen(req)), (ssize_t)strlen(req));
        }
    }
    int code;
    char *t = get("/api/status", &code);
    cr_assert_eq(code, 200);
    jval a;
    parse(t, &a);
    json_free(&a);
    free(t);
    for (int i = 0; i < 16; i++)
        close(fds[i]);
}

Test(dashboard, url_without_a_dashboard_is_not_found, .init = NULL, .fini = NULL)
{
    cask_runtime *plain;
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU, .ncpu = 1 };
    unsetenv("CASK_DASHBOARD");
    cr_assert_eq(cask_init(&cfg, &plain), CASK_OK);
    char url[64];
    cr_assert_eq(cask_dashboard_url(plain, url, sizeof url), CASK_ERR_NOT_FOUND);
    cr_assert_str_empty(url);
    cr_assert_eq(cask_shutdown(plain), CASK_OK);
}

Test(dashboard, bad_address_is_refused_at_init, .init = NULL, .fini = NULL)
{
    cask_runtime *bad = NULL;
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_DASHBOARD | CASK_CONFIG_LOG_LEVEL,
                        .ncpu = 1, .dashboard = "nowhere:99999", .log_level = CASK_LOG_ERROR };
    cr_assert_eq(cask_init(&cfg, &bad), CASK_ERR_INVALID);
    cr_assert_null(bad);
}

Test(dashboard, failed_tasks_are_counted_per_kernel, .init = NULL, .fini = NULL)
{
    cask_runtime *r;
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_DASHBOARD | CASK_CONFIG_LOG_LEVEL,
                        .ncpu = 1, .dashboard = "127.0.0.1:0", .log_level = CASK_LOG_ERROR };
    cr_assert_eq(cask_init(&cfg, &r), CASK_OK);
    char url[128];
    cr_assert_eq(cask_dashboard_url(r, url, sizeof url), CASK_OK);
    cr_assert_eq(sscanf(url, "http://127.0.0.1:%d/", &port), 1);
    cask_kernel *k;
    cask_kernel_desc kd = { .name = "doomed", .cpu = fail_always };
    cr_assert_eq(cask_kernel_register(r, &kd, &k), CASK_OK);
    cask_graph *g;
    cr_assert_eq(cask_graph_create(r, &g), CASK_OK);
    cask_task_desc td = { .kernel = k };
    cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    cr_assert_eq(cask_graph_compute(g), CASK_ERR_TASK_FAILED);
    int code;
    char *t = get("/metrics", &code);
    cr_assert_not_null(strstr(t, "cask_tasks_failed_total{kernel=\"doomed\"} 1\n"), "%s", t);
    free(t);
    cask_graph_destroy(g);
    cr_assert_eq(cask_shutdown(r), CASK_OK);
}
