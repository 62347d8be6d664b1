/* tests/test_host_pin.c: runtime/host_pin.c with its locking calls replaced by counters
 * (no GPU needed): large blocks are 2 MiB-aligned mappings, filled, locked once and
 * unlocked once when freed; small blocks and blocks whose locking fails take the plain
 * allocation; the registry tells the two kinds apart for any number of blocks. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "runtime/host_pin.h"

#define MIB ((size_t)1 << 20)

static int locks, unlocks, allocs, frees, fail_lock;
static size_t locked_len;

static int t_lock(void *p, size_t len)
{
    (void)p;
    if (fail_lock)
        return -1;
    locks++;
    locked_len = len;
    return 0;
}
static void t_unlock(void *p) { (void)p; unlocks++; }
static int t_alloc(void **p, size_t bytes, char *msg, size_t msglen)
{
    (void)msg, (void)msglen;
    allocs++;
    return posix_memalign(p, 64, bytes) ? -1 : 0;
}
static void t_free(void *p) { frees++; free(p); }

static const host_pin_ops ops = {t_lock, t_unlock, t_alloc, t_free};

static void reset(void)
{
    locks = unlocks = allocs = frees = fail_lock = 0;
    locked_len = 0;
}

TestSuite(host_pin, .init = reset);

/* Where the machine gives no huge pages the mapped path is off: say so and test the rest. */
static host_pin *make(void)
{
    host_pin *hp = host_pin_create(1, &ops);
    cr_assert(hp);
    if (!host_pin_maps(hp))
        cr_log_warn("this kernel gives no transparent huge pages: the mapped path is off");
    return hp;
}

Test(host_pin, large_blocks_mapped_aligned_locked_once)
{
    host_pin *hp = make();
    char msg[160];
    void *p = NULL;
    size_t bytes = 9 * MIB + 123;
    cr_assert_eq(host_pin_alloc(hp, bytes, &p, msg, sizeof msg), CASK_OK);
    memset(p, 0x5a, bytes);   /* every byte usable */
    if (host_pin_maps(hp)) {
        cr_assert_eq((uintptr_t)p % (2 * MIB), 0);
        cr_assert_eq(locks, 1);
        cr_assert_eq(locked_len, 10 * MIB);
        cr_assert_eq(allocs, 0);
    } else {
        cr_assert_eq(allocs, 1);
    }
    host_pin_free(hp, p);
    cr_assert_eq(unlocks, locks);
    cr_assert_eq(frees, allocs);
    host_pin_destroy(hp);
}

Test(host_pin, small_blocks_and_huge_pages_off_take_the_plain_way)
{
    host_pin *hp = make();
    char msg[160];
    void *p = NULL;
    cr_assert_eq(host_pin_alloc(hp, HOST_PIN_MIN - 1, &p, msg, sizeof msg), CASK_OK);
    cr_assert_eq(allocs, 1);
    cr_assert_eq(locks, 0);
    host_pin_free(hp, p);
    cr_assert_eq(frees, 1);
    host_pin_destroy(hp);
    host_pin *off = host_pin_create(0, &ops);   /* CASK_HUGE_PAGES=0 */
    cr_assert_not(host_pin_maps(off));
    cr_assert_eq(host_pin_alloc(off, 64 * MIB, &p, msg, sizeof msg), CASK_OK);
    cr_assert_eq(allocs, 2);
    cr_assert_eq(locks, 0);
    host_pin_free(off, p);
    cr_assert_eq(frees, 2);
    host_pin_destroy(off);
}

Test(host_pin, failed_lock_falls_back_and_frees_right)
{
    host_pin *hp = make();
    char msg[160];
    void *p = NULL;
    fail_lock = 1;
    cr_assert_eq(host_pin_alloc(hp, 16 * MIB, &p, msg, sizeof msg), CASK_OK);
    cr_assert_eq(allocs, 1);
    host_pin_free(hp, p);
    cr_assert_eq(frees, 1);
    cr_assert_eq(unlocks, 0);
    host_pin_destroy(hp);
}

Test(host_pin, many_blocks_of_both_kinds_freed_in_any_order)
{
    host_pin *hp = make();
    enum { N = 40 };
    void *p[N];
    char msg[160];
    for (int i = 0; i < N; i++) {
        size_t bytes = i % 2 ? 8 * MIB : 4096;
        cr_assert_eq(host_pin_alloc(hp, bytes, &p[i], msg, sizeof msg), CASK_OK);
        memset(p[i], i, bytes);
    }
    for (int i = N - 1; i >= 0; i -= 2)
        host_pin_free(hp, p[i]);
    for (int i = 0; i < N; i += 2)
        host_pin_free(hp, p[i]);
    cr_assert_eq(unlocks, locks);
    cr_assert_eq(frees, allocs);
    cr_assert_eq(locks + allocs, N);
    if (host_pin_maps(hp))
        cr_assert_eq(locks, N / 2);
    host_pin_destroy(hp);
}

/* A block large enough to be faulted in by several threads (host_pin.c): every page of
 * the mapping is resident before it is locked, and reads zero. */
Test(host_pin, a_block_filled_by_several_threads_is_resident_and_zero_throughout)
{
    host_pin *hp = make();
    if (!host_pin_maps(hp)) {
        host_pin_destroy(hp);
        cr_skip_test("no transparent huge pages: blocks are not mapped and filled here");
    }
    char msg[160];
    void *p = NULL;
    size_t bytes = 70 * MIB + 5;   /* 72 MiB mapped: four shares of 18 */
    cr_assert_eq(host_pin_alloc(hp, bytes, &p, msg, sizeof msg), CASK_OK);
    cr_assert_eq(locked_len, 72 * MIB);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), npages = locked_len / page;
    unsigned char *vec = malloc(npages);
    cr_assert(vec);
    cr_assert_eq(mincore(p, locked_len, vec), 0);
    size_t missing = 0;
    for (size_t i = 0; i < npages; i++) missing += !(vec[i] & 1);
    cr_assert_eq(missing, 0, "%zu of %zu pages not faulted in", missing, npages);
    for (size_t o = 0; o < locked_len; o += page)
        cr_assert_eq(((volatile char *)p)[o], 0, "byte %zu not zero", o);
    free(vec);
    host_pin_free(hp, p);
    host_pin_destroy(hp);
}
