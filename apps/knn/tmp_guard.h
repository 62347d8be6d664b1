/* tmp_guard.h: the temporary output file (PATH.tmp.PID, or the job's) is removed if a
 * signal (SIGINT, SIGTERM, SIGHUP) ends the run before it was committed or removed. One
 * guarded file per process; not thread-safe (main's thread arms and disarms it). */
#ifndef CASK_KNN_TMP_GUARD_H
#define CASK_KNN_TMP_GUARD_H

/* Armed with the temporary file's name: one process, before it is made (knn_outfile_open's
 * PATH.tmp.PID), so that a signal arriving while it is made still removes it; several,
 * on rank 0 once the job made it (knn_out_open). */
void knn_tmp_arm(const char *tmp_path);
/* The file was made under another name than the one armed: guard that one instead. */
void knn_tmp_rename(const char *tmp_path);
/* The file was committed or removed: a signal leaves everything as it is. */
void knn_tmp_disarm(void);

#endif
