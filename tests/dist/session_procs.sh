# tests/dist/session_procs.sh: sourced by run.sh and chaos.sh (POSIX sh).
#
# others_running SID: a process of session SID other than SID itself (the launcher, which
# setsid made the session's leader) is still running. Zombies count as exited: a hung
# launcher may never reap its ranks. Reads /proc with the shell's own read, no fork per
# process.
others_running() {
  for _sp_st in /proc/[0-9]*/stat; do
    read -r _sp_line 2>/dev/null < "$_sp_st" || continue   # stderr first: a process gone since the glob
    _sp_pid=${_sp_st#/proc/}; _sp_pid=${_sp_pid%/stat}
    [ "$_sp_pid" = "$1" ] && continue
    # after the command name, which may hold spaces: state ppid pgrp session ...
    set -- "$1" ${_sp_line##*) }
    [ "$5" = "$1" ] && [ "$2" != Z ] && return 0
  done
  return 1
}
