/* tests/test_runtime_env.c: the runtime's configuration from the environment: CASK_NCPU,
 * CASK_SCHED and CASK_LOG, their bad values, the config fields that win over them, the
 * defaults without them, and a hidden /sys (no CPU topology). Criterion runs each test in
 * its own process, so setenv does not leak. */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cask/cask.h"
#include "runtime_helpers.h"
#include "test_helpers.h"

TestSuite(runtime, .init = clear_env, .fini = leak_check, .timeout = 60);

/* ---- environment ---- */

Test(runtime, env_cask_ncpu_sets_the_worker_count)
{
    setenv("CASK_NCPU", "3", 1);
    cask_runtime *rt;
    cr_assert_eq(cask_init(NULL, &rt), CASK_OK);
    cr_assert_eq(query(rt).ncpu_workers, 3);
    run_tasks(rt, 100);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

static void check_env_sched(const char *value, cask_sched_policy want)
{
    setenv("CASK_SCHED", value, 1);
    setenv("CASK_NCPU", "2", 1);
    cask_runtime *rt;
    cr_assert_eq(cask_init(NULL, &rt), CASK_OK, "CASK_SCHED=%s", value);
    cr_assert_eq(query(rt).sched, want, "CASK_SCHED=%s", value);
    run_tasks(rt, 100);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, env_cask_sched_ws) { check_env_sched("ws", CASK_SCHED_WS); }
Test(runtime, env_cask_sched_locality) { check_env_sched("locality", CASK_SCHED_LOCALITY); }
Test(runtime, env_cask_sched_eager) { check_env_sched("eager", CASK_SCHED_EAGER); }

Test(runtime, default_sched_is_locality)
{
    cask_config cfg = cpu_config(1);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cr_assert_eq(query(rt).sched, CASK_SCHED_LOCALITY);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* Sends stderr to a temporary file until capture_end, which returns what was written
 * (malloc'd, NUL-terminated). */
static int saved_stderr = -1;
static FILE *capture_file;

static void capture_begin(void)
{
    fflush(stderr);
    saved_stderr = dup(STDERR_FILENO);
    capture_file = tmpfile();
    cr_assert_not_null(capture_file);
    cr_assert_geq(dup2(fileno(capture_file), STDERR_FILENO), 0);
}

static char *capture_end(void)
{
    fflush(stderr);
    cr_assert_geq(dup2(saved_stderr, STDERR_FILENO), 0);
    close(saved_stderr);
    fseek(capture_file, 0, SEEK_END);
    long len = ftell(capture_file);
    rewind(capture_file);
    char *text = calloc((size_t)(len > 0 ? len : 0) + 1, 1);
    cr_assert_not_null(text);
    size_t got = fread(text, 1, (size_t)(len > 0 ? len : 0), capture_file);
    text[got] = '\0';
    fclose(capture_file);
    return text;
}

static char *capture_stderr(void (*fn)(void))
{
    capture_begin();
    fn();
    return capture_end();
}

static void log_one_of_each_level(void)
{
    cask_runtime *rt;
    cr_assert_eq(cask_init(NULL, &rt), CASK_OK);
    cask_log(rt, CASK_LOG_ERROR, "marker-error-%d", 1);
    cask_log(rt, CASK_LOG_WARN, "marker-warn-%d", 2);
    cask_log(rt, CASK_LOG_INFO, "marker-info-%d", 3);
    cask_log(rt, CASK_LOG_DEBUG, "marker-debug-%d", 4);
    cask_log(rt, CASK_LOG_TRACE, "marker-trace-%d", 5);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, env_cask_log_debug_shows_debug_but_not_trace)
{
    setenv("CASK_NCPU", "1", 1);
    setenv("CASK_LOG", "debug", 1);
    char *text = capture_stderr(log_one_of_each_level);
    cr_assert_not_null(strstr(text, "marker-error-1"), "stderr: %s", text);
    cr_assert_not_null(strstr(text, "marker-warn-2"), "stderr: %s", text);
    cr_assert_not_null(strstr(text, "marker-info-3"), "stderr: %s", text);
    cr_assert_not_null(strstr(text, "marker-debug-4"), "stderr: %s", text);
    cr_assert_null(strstr(text, "marker-trace-5"), "stderr: %s", text);
    free(text);
}

Test(runtime, env_cask_log_error_hides_warnings)
{
    setenv("CASK_NCPU", "1", 1);
    setenv("CASK_LOG", "error", 1);
    char *text = capture_stderr(log_one_of_each_level);
    cr_assert_not_null(strstr(text, "marker-error-1"), "stderr: %s", text);
    cr_assert_null(strstr(text, "marker-warn-2"), "stderr: %s", text);
    cr_assert_null(strstr(text, "marker-debug-4"), "stderr: %s", text);
    free(text);
}

Test(runtime, default_log_level_is_warn)
{
    setenv("CASK_NCPU", "1", 1);
    char *text = capture_stderr(log_one_of_each_level);
    cr_assert_not_null(strstr(text, "marker-warn-2"), "stderr: %s", text);
    cr_assert_null(strstr(text, "marker-info-3"), "stderr: %s", text);
    free(text);
}

/* A container that hides /sys: hwloc cannot read the CPU topology (HWLOC_FSROOT points
 * it, and cask, at an empty root). cask warns once, on its own log, and runs with the CPUs
 * this process may use, all bound in order. */
static void init_without_cpu_topology(void)
{
    cask_runtime *rt;
    cr_assert_eq(cask_init(NULL, &rt), CASK_OK);
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    cr_assert_eq(query(rt).ncores, CPU_COUNT(&set));
    cr_assert_eq(query(rt).ncpu_workers, CPU_COUNT(&set));
    run_tasks(rt, 1000);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, hidden_sys_warns_once_and_runs_on_the_allowed_cpus)
{
    char root[] = "/tmp/cask_fsroot_XXXXXX";
    cr_assert_not_null(mkdtemp(root));
    setenv("HWLOC_FSROOT", root, 1);
    unsetenv("CASK_NCPU");
    char *text = capture_stderr(init_without_cpu_topology);
    unsetenv("HWLOC_FSROOT");
    rmdir(root);
    const char *first = strstr(text, "topology: ");
    cr_assert_not_null(first, "stderr: %s", text);
    cr_assert_null(strstr(first + 1, "topology: "), "warned twice: %s", text);
    cr_assert_null(strstr(text, "hwloc/linux"), "hwloc wrote to stderr: %s", text);
    free(text);
}

static void check_env_invalid(const char *var, const char *value)
{
    setenv(var, value, 1);
    cask_runtime *rt = NULL;
    cask_status st = cask_init(NULL, &rt);
    cr_assert_eq(st, CASK_ERR_INVALID, "%s=%s gave %s", var, value, cask_status_string(st));
}

Test(runtime, env_cask_ncpu_not_a_number_is_invalid) { check_env_invalid("CASK_NCPU", "many"); }
Test(runtime, env_cask_ncpu_trailing_garbage_is_invalid) { check_env_invalid("CASK_NCPU", "4x"); }
/* CASK_NGPU=0 (set by clear_env): zero CPU workers would leave no worker at all. */
Test(runtime, env_cask_ncpu_zero_without_gpus_is_invalid) { check_env_invalid("CASK_NCPU", "0"); }
Test(runtime, env_cask_ncpu_negative_is_invalid) { check_env_invalid("CASK_NCPU", "-2"); }
Test(runtime, env_cask_sched_unknown_is_invalid) { check_env_invalid("CASK_SCHED", "fifo"); }
Test(runtime, env_cask_log_unknown_is_invalid) { check_env_invalid("CASK_LOG", "loud"); }

Test(runtime, config_ncpu_wins_over_env)
{
    setenv("CASK_NCPU", "3", 1);
    cask_config cfg = cpu_config(2);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cr_assert_eq(query(rt).ncpu_workers, 2);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, config_sched_wins_over_env)
{
    setenv("CASK_SCHED", "eager", 1);
    cask_config cfg = cpu_config(1);
    cfg.field_mask |= CASK_CONFIG_SCHED;
    cfg.sched = CASK_SCHED_WS;
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cr_assert_eq(query(rt).sched, CASK_SCHED_WS);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, config_field_makes_invalid_env_irrelevant)
{
    setenv("CASK_NCPU", "many", 1);
    cask_config cfg = cpu_config(2);
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cr_assert_eq(query(rt).ncpu_workers, 2);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(runtime, config_log_level_wins_over_env)
{
    setenv("CASK_NCPU", "1", 1);
    setenv("CASK_LOG", "error", 1);
    cask_config cfg = { .field_mask = CASK_CONFIG_LOG_LEVEL, .log_level = CASK_LOG_INFO };
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    capture_begin();
    cask_log(rt, CASK_LOG_INFO, "marker-info-%d", 7);
    char *text = capture_end();
    cr_assert_not_null(strstr(text, "marker-info-7"), "stderr: %s", text);
    free(text);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}
