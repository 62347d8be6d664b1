/* cask.h: the whole public API of cask, a task-graph runtime for CPU cores and GPUs.
 * See docs/guide.md. Include this, link with `pkg-config --libs cask`. */
#ifndef CASK_H
#define CASK_H

#include "cask/status.h"
#include "cask/runtime.h"
#include "cask/data.h"
#include "cask/task.h"
#include "cask/graph.h"
#include "cask/future.h"
#include "cask/knn.h"
#include "cask/array.h"
#include "cask/distributed.h"
#include "cask/dist_matrix.h"

#define CASK_VERSION_MAJOR 0
#define CASK_VERSION_MINOR 1
#define CASK_VERSION_PATCH 0

#endif
