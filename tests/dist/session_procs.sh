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

# session_dump SID: what each process of session SID is doing (for a test that hung):
# its state and command, each thread's kernel wait, and with gdb on PATH its threads'
# stacks (CASK_TEST_NO_GDB=1: not).
session_dump() {
  for _sd_st in /proc/[0-9]*/stat; do
    read -r _sd_line 2>/dev/null < "$_sd_st" || continue
    _sd_pid=${_sd_st#/proc/}; _sd_pid=${_sd_pid%/stat}
    set -- "$1" ${_sd_line##*) }
    [ "$5" = "$1" ] || continue
    echo "-- pid $_sd_pid (state $2): $(tr '\0' ' ' < /proc/$_sd_pid/cmdline 2>/dev/null | cut -c1-160)"
    for _sd_t in /proc/$_sd_pid/task/*; do
      echo "   thread ${_sd_t##*/} $(cat "$_sd_t/comm" 2>/dev/null): waits in $(cat "$_sd_t/wchan" 2>/dev/null), syscall $(cut -d' ' -f1 "$_sd_t/syscall" 2>/dev/null)"
    done
    if [ "$2" != Z ] && [ "${CASK_TEST_NO_GDB:-0}" != 1 ] && command -v gdb > /dev/null; then
      timeout 10 gdb -p "$_sd_pid" -batch -ex "thread apply all bt 16" 2>/dev/null |
        grep -E '^(Thread|#)' | head -120
    fi
  done
}
