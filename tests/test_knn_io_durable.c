/* tests/test_knn_io_durable.c: cask-knn's output is durable when it appears
 * (apps/knn/points.c, knn_outfile_commit): the data are synced to the disk (fdatasync)
 * while the file still has its temporary name and holds every byte, and only then
 * renamed; a sync that fails fails the commit, removes the temporary file and leaves
 * the destination as it was. fdatasync is interposed here (points.c is linked into this
 * program, so its calls bind to this definition), which records each call and can fail. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "points.h"

static int syncs;                 /* fdatasync calls */
static int fail_with;             /* errno to fail them with, 0: pass to the kernel */
static const char *final_path;    /* must not exist at the sync */
static off_t size_at_sync = -1;   /* the file's bytes when synced */
static int final_existed;

int fdatasync(int fd)
{
    syncs++;
    struct stat sb;
    size_at_sync = fstat(fd, &sb) == 0 ? sb.st_size : -1;
    final_existed = final_path && access(final_path, F_OK) == 0;
    if (fail_with) {
        errno = fail_with;
        return -1;
    }
    return (int)syscall(SYS_fdatasync, fd);
}

static char dir[64], path[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/test_knn_durable_XXXXXX");
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/r.npy", dir);
    syncs = 0;
    fail_with = 0;
    final_path = path;
    size_at_sync = -1;
    final_existed = 0;
}

static void teardown(void)
{
    unlink(path);
    rmdir(dir);
}

Test(knn_durable, commit_syncs_every_byte_before_the_name_appears, .init = setup,
     .fini = teardown)
{
    knn_outfile o;
    char err[KNN_ERRLEN];
    cr_assert_eq(knn_outfile_open(&o, path, err, sizeof err), CASK_OK, "%s", err);
    static char block[100000];
    memset(block, 'x', sizeof block);
    cr_assert_eq(fwrite(block, 1, sizeof block, o.f), sizeof block);   /* still buffered */
    cr_assert_eq(knn_outfile_commit(&o, err, sizeof err), CASK_OK, "%s", err);
    cr_assert_eq(syncs, 1, "the data must be synced once before the rename");
    cr_assert_eq(size_at_sync, (off_t)sizeof block, "synced with %lld of %zu bytes written",
                 (long long)size_at_sync, sizeof block);
    cr_assert(!final_existed, "the file had its final name before its data were synced");
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(sb.st_size, (off_t)sizeof block);
}

Test(knn_durable, a_failed_sync_fails_the_commit_and_keeps_the_old_file, .init = setup,
     .fini = teardown)
{
    FILE *old = fopen(path, "w");
    fputs("old", old);
    fclose(old);
    knn_outfile o;
    char err[KNN_ERRLEN];
    cr_assert_eq(knn_outfile_open(&o, path, err, sizeof err), CASK_OK, "%s", err);
    char tmp[200];
    snprintf(tmp, sizeof tmp, "%s", o.tmp_path);
    fputs("new results", o.f);
    fail_with = EIO;
    cr_assert_eq(knn_outfile_commit(&o, err, sizeof err), CASK_ERR_IO);
    cr_assert(strstr(err, "fdatasync") && strstr(err, strerror(EIO)), "message: %s", err);
    cr_assert_eq(access(tmp, F_OK), -1, "the temporary file must be removed");
    char buf[16] = "";
    FILE *f = fopen(path, "r");
    cr_assert(f && fgets(buf, sizeof buf, f));
    fclose(f);
    cr_assert_str_eq(buf, "old", "the destination must be left as it was");
}
