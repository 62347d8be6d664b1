/* same_input.c: do the ranks of a job hold the same input? Two agreements (the smallest
 * digest; who differs from it), so a job whose nodes read different copies of a file
 * stops before the search with one line naming a rank that differs. See same_input.h. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "same_input.h"

int64_t knn_points_digest(const knn_points *p, int64_t seed)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)seed;
    const uint64_t prime = 0x100000001b3ull;
    h = (h ^ (uint64_t)p->n) * prime;
    h = (h ^ (uint64_t)(p->f64 * 2 + p->degrees)) * prime;
    size_t bytes = (size_t)p->n * 2 * (p->f64 ? sizeof(double) : sizeof(float));
    const unsigned char *b = p->data;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * prime;
    }
    for (; i < bytes; i++)
        h = (h ^ b[i]) * prime;
    return (int64_t)(h >> 1);
}

int knn_ranks_same_input(knn_cluster *c, const char *prog, int failed, const knn_points *obs,
                         const knn_points *ref, const char *obs_path, const char *ref_path,
                         char *err, size_t errlen)
{
    if (c->size <= 1)
        return failed;
    int64_t mine = 0;
    if (!failed)
        mine = knn_points_digest(ref, knn_points_digest(obs, 0));
    int64_t lowest = mine;
    if (knn_ranks_agree(c, prog, failed, &lowest, err, errlen))
        return 1;
    int differs = mine != lowest;
    if (differs) {
        char host[256] = "?";
        gethostname(host, sizeof host - 1);
        snprintf(err, errlen,
                 "the ranks read different inputs: rank %d (host %s) read --obs %s (%lld "
                 "points) and --ref %s (%lld points), digest %016llx, another rank %016llx: "
                 "every rank must read the same files (a shared file system, or the same "
                 "copy on every node)",
                 c->rank, host, obs_path, (long long)obs->n, ref_path, (long long)ref->n,
                 (unsigned long long)mine, (unsigned long long)lowest);
    }
    int64_t none = 0;
    return knn_ranks_agree(c, prog, differs, &none, err, errlen);
}
