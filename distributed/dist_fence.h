/* distributed/dist_fence.h: fencing a rank out, from both sides (see dist_fence.c). */
#ifndef CASK_DIST_FENCE_H
#define CASK_DIST_FENCE_H

#include <stdint.h>

#include "distributed/dist_impl.h"

/* Tells rank `to`, if this rank holds it dead and its transport does not, that it is
 * out (a MEMBER answer whose mask names it: dist_member_on_msg there sets
 * dist->fenced). Not under dist->mu; any thread. */
void dist_fence_tell(cask_dist *dist, int to);
/* Ranks just suspected, or just left out by an agreed view (a mask): each is told,
 * the tasks shipped to it end with CASK_ERR_PEER, and the transport declares it lost
 * (xport_ucx_fence). Not under dist->mu. */
void dist_fence_out(cask_dist *dist, uint64_t ranks);
/* This rank was just fenced out (dist->fenced, dist->fenced_msg set): every wait it
 * may be in ends with the fenced message. Not under dist->mu. */
void dist_fence_self(cask_dist *dist);

#endif
