#!/bin/bash
# tests/dist/chaos.sh: the chaos soak. Runs cases of tests/dist/test_dist_chaos (random
# distributed graphs checked bit for bit against a sequential replay; one case = one
# seed) for a given time, on a random number of ranks, killing (SIGKILL) or freezing
# (SIGSTOP, then SIGCONT after a while, or never) a random rank at a random moment:
# inside a task or right after a compute (the program's own hook, CHAOS_FAULT), or from
# outside (kill on the rank's pid) at a random delay after every rank joined, after a
# compute started, or while the rank joins (--boot-faults; the default with the file
# bootstrap only, see below); in 15% of the cases on 3 ranks or more, a second rank is
# killed up to 3 s after the first fault.
#
#   chaos.sh [--minutes M | --seconds S] [--cases N] [--np A..B | --np N] [--seed S]
#            [--limit SEC] [--launcher mpirun|local|netns] [--boot-faults] [--program PATH]
#            [--logs DIR] [--gpus PCT] [-v]
#   chaos.sh --replay SEED --np N --fault SPEC [--sim-gpus G]   one case again, its log
#                                                               printed
#   chaos.sh --selftest                             the verdicts themselves can fail
#
# --gpus PCT: that share of the cases (a draw after the fault's, from the case's seed) runs
# with 2 simulated GPUs a rank (CHAOS_SIM_GPUS, see test_dist_chaos.c), about half of the
# tasks on GPUs; half of those cases with the GPU route between ranks (chunks GPU to GPU,
# GPU-made results gathered GPU to GPU: "sim GPUs 2", replayed with --sim-gpus 2), half
# with the host route (GPU-made chunks staged through host memory, as between hosts:
# "sim GPUs 2h", --sim-gpus 2h). A replay's default: $CHAOS_SIM_GPUS, else 0.
#
# --launcher: mpirun (PMIx; the default where Open MPI's is found), local (the file
# bootstrap, launch-local.sh), netns (the file bootstrap, each rank an emulated host of
# its own: network, UTS, IPC, PID and mount namespaces, TCP between them;
# launch-netns.sh, as root, whose hostpid.R files give the pids to signal). Faults
# while joining (--boot-faults) are the default with the file bootstrap.
#
# Each case must end within --limit seconds (default 90; a hang otherwise: every process
# of the case is killed). Verdicts:
#   ok          no fault (or it hit after the ranks were done): every rank's results are
#               the replay's, every call succeeded
#   clean       a fault: every surviving rank either has the replay's results or
#               returned an error naming the lost rank (CASK_ERR_PEER "rank N lost: ...");
#               the frozen rank, if continued, ended with a result or an error of its own
#   HANG        the case passed its limit
#   WRONG       a rank's compute returned CASK_OK with a result that differs
#   CRASH       a rank that was not the victim ended without an outcome (died, exit 1)
#   UNEXPLAINED an error without a fault, or one that does not name the victim
# CHAOS_REQUIRE_RECOVERY=1 (lineage recovery, docs/distributed.md): a case whose graphs are
# reproducible (chaos_gen.h) must give the replay's results on every survivor; an
# error there is NOT-RECOVERED, a failure, except where no recovery is promised: a
# case where a rank's cask_dist_barrier failed on the loss (include/cask/distributed.h) or a
# rank other than the victim was fenced for want of a majority ("fenced out ... no
# majority", in its outcome or the log); that rank stops, and the others cannot finish
# without it. CHAOS_BARRIER_GO_ON=1: a rank whose
# barrier failed on the loss notes it and goes on to its next compute (test_dist_chaos.c),
# so such a case is asked to recover too (with CHAOS_REQUIRE_RECOVERY=1); "went-on" counts
# the cases where a rank did. Informational counts (not failures):
# suspected (a freeze shorter than the peer timeout still made the survivors give up),
# split (some ranks succeeded where others failed), missed (an outside fault whose
# moment came after the victim, or every rank, was through), second (cases where a
# second rank was killed), gpus (cases on simulated GPUs, --gpus), launcher-hung
# (mpirun: every rank had exited, some with an outcome, and mpirun was still running
# CHAOS_LAUNCHER_GRACE seconds (10) later: ended, and the case judged by its ranks'
# outcomes, as run.sh does; docs/distributed.md, "Known launcher problems"). Split,
# suspected and launcher-hung cases are printed.
# Exit status: 0 if no HANG, WRONG, CRASH, UNEXPLAINED or NOT-RECOVERED, else 1 (the
# replay command of each bad case is printed, its log kept under --logs); 77 (skip)
# without a launcher.
# Environment: CHAOS_PEER_TIMEOUT_MS (4000), passed to the ranks (CHAOS_PEER_TIMEOUTS=
# MS0,MS1,... sets it per rank: test_dist_chaos.c); CASK_BOOT_TIMEOUT
# (20 s here); CASK_MPIRUN as run.sh.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/session_procs.sh"
launcher_grace=${CHAOS_LAUNCHER_GRACE:-10}
# a case's job runs in a session of its own (setsid): ended with this script when it is
# stopped (meson's timeout, ^C), or a launcher hung after its ranks exited outlives it
current_job=""
trap '[ -n "$current_job" ] && kill -KILL -- -"$current_job" 2>/dev/null; exit 143' TERM INT HUP
seconds=60 cases=0 nplo=2 nphi=4 seed0="" limit=90 launcher="" program="" logs="" verbose=0
replay="" rfault="" selftest=0 boot_faults="" gpus_pct=0 rgpus=${CHAOS_SIM_GPUS:-0}
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) seconds=$(( $2 * 60 )); shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --np) case "$2" in
            *..*) nplo=${2%..*}; nphi=${2#*..} ;;
            *) nplo=$2; nphi=$2 ;;
          esac; shift 2 ;;
    --seed) seed0=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --launcher) launcher=$2; shift 2 ;;
    --program) program=$2; shift 2 ;;
    --logs) logs=$2; shift 2 ;;
    --replay) replay=$2; shift 2 ;;
    --fault) rfault=$2; shift 2 ;;
    --gpus) gpus_pct=$2; shift 2 ;;
    --sim-gpus) rgpus=$2; shift 2 ;;
    --selftest) selftest=1; shift ;;
    --boot-faults) boot_faults=1; shift ;;
    -v) verbose=1; shift ;;
    *) echo "chaos.sh: unknown argument $1 (see the top of $0)" >&2; exit 2 ;;
  esac
done
if [ -z "$program" ]; then
  for p in "${CHAOS_PROGRAM:-}" "$here/../../build/tests/test_dist_chaos"; do
    [ -n "$p" ] && [ -x "$p" ] && { program=$p; break; }
  done
fi
[ -x "$program" ] || { echo "chaos.sh: no test_dist_chaos (build it, or --program PATH)" >&2; exit 2; }
[ "$nplo" -ge 2 ] && [ "$nphi" -ge "$nplo" ] || { echo "chaos.sh: --np needs 2 ranks or more" >&2; exit 2; }

mpirun=${CASK_MPIRUN:-$(command -v mpirun 2>/dev/null || command -v mpiexec 2>/dev/null || true)}
if [ -z "$launcher" ]; then
  launcher=local
  if [ -n "$mpirun" ] && [ "${CASK_TEST_HAVE_PMIX:-1}" != 0 ] &&
     "$mpirun" --version 2>&1 | head -n 3 | grep -Eq 'Open MPI|OpenRTE|PRRTE|prterun'; then
    launcher=mpirun
  fi
fi
if [ "$launcher" = mpirun ]; then
  [ -n "$mpirun" ] || { echo "no mpirun: skipped"; exit 77; }
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export PRTE_ALLOW_RUN_AS_ROOT=1 PRTE_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_plm_rsh_agent=${OMPI_MCA_plm_rsh_agent:-false}
fi
case "$launcher" in
  mpirun|local) ;;
  netns) "$here/launch-netns.sh" 1 true 2>&1 | tail -n 1
         [ "${PIPESTATUS[0]}" = 0 ] || { echo "chaos.sh: no network-namespace hosts here: skipped"; exit 77; } ;;
  *) echo "chaos.sh: --launcher mpirun, local or netns" >&2; exit 2 ;;
esac
# A rank killed inside PMIx_Init leaves Open MPI 4.1's PMIx server unable to serve the
# others, whose PMIx_Init then never returns (seen with mpirun 4.1.4: "PMIX ERROR:
# UNREACHABLE"): faults while joining only with the file bootstrap, unless asked.
[ -n "$boot_faults" ] || { [ "$launcher" != mpirun ] && boot_faults=1 || boot_faults=0; }
export CHAOS_PEER_TIMEOUT_MS=${CHAOS_PEER_TIMEOUT_MS:-4000} CHAOS_PEER_TIMEOUTS=${CHAOS_PEER_TIMEOUTS:-}
export CASK_BOOT_TIMEOUT=${CASK_BOOT_TIMEOUT:-20}
require_recovery=${CHAOS_REQUIRE_RECOVERY:-0}
export CHAOS_BARRIER_GO_ON=${CHAOS_BARRIER_GO_ON:-0}
[ -n "$logs" ] || logs=$(mktemp -d "${TMPDIR:-/tmp}/cask-chaos.XXXXXX")
mkdir -p "$logs"

tick() { local t=${EPOCHREALTIME/./}; NOW=$(( t / 1000 )); }   # ms

# ---- choosing a case's fault (bash's RANDOM seeded by the case's seed) ----
# SPEC: none | FAULT[,KILL:RANK2:MS]
# FAULT: in:MODE:RANK:GRAPH:COMPUTE:K[:CONT]  the program's hook (test_dist_chaos.c)
#        out:SIG:RANK:AT[:CONT]               kill -SIG on the rank's pid, AT ms after
#                                             every rank joined (AT a number), after the
#                                             N-th start of a compute on any rank (cN+MS),
#                                             or after the rank began joining (bMS)
# CONT (stops only): milliseconds until SIGCONT, or never. ,KILL:RANK2:MS: a second
# rank is killed MS ms after the first fault hit (a failure while the first is handled).
pick_cont() {
  local c=$(( RANDOM % 100 ))
  if [ $c -lt 30 ]; then echo $(( 100 + RANDOM % 1400 ))                      # < the timeout
  elif [ $c -lt 65 ]; then echo $(( CHAOS_PEER_TIMEOUT_MS + 1000 + RANDOM % 4000 ))  # past it
  else echo never; fi
}
pick_fault() {   # $1 np
  local np=$1 c=$(( RANDOM % 100 )) f victim
  if [ $c -lt 15 ]; then echo none; return; fi
  if [ $c -lt 40 ]; then
    local k=$(( RANDOM % 40 )); [ $(( RANDOM % 5 )) = 0 ] && k=-1
    victim=$(( RANDOM % np ))
    f="in:kill:$victim:$(( RANDOM % 2 )):$(( RANDOM % 3 )):$k"
  elif [ $c -lt 60 ]; then
    local k=$(( RANDOM % 40 )); [ $(( RANDOM % 5 )) = 0 ] && k=-1
    victim=$(( RANDOM % np ))
    f="in:stop:$victim:$(( RANDOM % 2 )):$(( RANDOM % 3 )):$k:$(pick_cont)"
  else
    local spans=(80 300 1000) sig=KILL d a=$(( RANDOM % 100 ))
    [ $(( RANDOM % 100 )) -lt 40 ] && sig=STOP
    if [ $boot_faults = 1 ] && [ $a -lt 20 ]; then d=b$(( RANDOM % 300 ))
    elif [ $a -lt 60 ]; then d=$(( RANDOM % ${spans[$(( RANDOM % 3 ))]} ))
    else d=c$(( 1 + RANDOM % 3 ))+$(( RANDOM % 100 )); fi
    victim=$(( RANDOM % np ))
    if [ $sig = STOP ]; then f="out:STOP:$victim:$d:$(pick_cont)"
    else f="out:KILL:$victim:$d"; fi
  fi
  if [ "$np" -ge 3 ] && [ $(( RANDOM % 100 )) -lt 15 ]; then
    f="$f,KILL:$(( (victim + 1 + RANDOM % (np - 1)) % np )):$(( RANDOM % 3000 ))"
  fi
  echo "$f"
}

field() {   # $1 line, $2 name: the value of name=... (msg: the rest of the line)
  case "$2" in
    msg) printf '%s\n' "${1#*msg=}" ;;
    *) printf '%s\n' "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p" ;;
  esac
}

pid_of() {   # $1 dir, $2 rank: its pid once it joined, else before ("" if not yet)
  if [ "$launcher" = netns ]; then   # its getpid() is its PID namespace's: the launcher's
    if [ -e "$1/pid.$2" ] || [ -e "$1/boot.$2" ]; then
      [ -e "$1/hostpid.$2" ] && cat "$1/hostpid.$2"
    fi
  elif [ -e "$1/pid.$2" ]; then cat "$1/pid.$2"
  elif [ -e "$1/boot.$2" ]; then cat "$1/boot.$2"; fi
}

# ---- one case: sets VERDICT, WHY, INFO ----
run_case() {   # $1 seed, $2 np, $3 spec, $4 case directory, $5 simulated GPUs a rank (0)
  local seed=$1 np=$2 spec=${3%%,*} dir=$4 second="" gpus=${5:-0}
  case "$3" in *,*) second=${3#*,} ;; esac
  local kind a b c d e f mode="" victim=-1 delay=0 cont=none hook="none" victim2=-1 after2=0
  IFS=: read -r kind a b c d e f <<< "$spec"
  case "$kind" in
    in) mode=$a; victim=$b; hook="$a:$b:$c:$d:$e"; cont=${f:-none} ;;
    out) mode=$a; victim=$b; delay=$c; cont=${d:-none} ;;
  esac
  [ -n "$second" ] && IFS=: read -r a victim2 after2 <<< "$second"
  rm -rf "$dir"; mkdir -p "$dir"
  local log=$dir/log
  tick; local t0=$NOW
  if [ "$launcher" = mpirun ]; then
    CHAOS_DIR=$dir CHAOS_FAULT=$hook CHAOS_SIM_GPUS=$gpus setsid "$mpirun" -n "$np" --oversubscribe --enable-recovery \
      -x CHAOS_DIR -x CHAOS_FAULT -x CHAOS_PEER_TIMEOUT_MS -x CHAOS_PEER_TIMEOUTS -x CASK_BOOT_TIMEOUT -x CHAOS_BARRIER_GO_ON -x CHAOS_SIM_GPUS \
      "$program" "$seed" > "$log" 2>&1 &
  else
    CHAOS_DIR=$dir CHAOS_FAULT=$hook CHAOS_SIM_GPUS=$gpus CASK_HOST_PID_DIR=$dir setsid "$here/launch-$launcher.sh" "$np" "$program" "$seed" \
      > "$log" 2>&1 &
  fi
  local job=$!
  current_job=$job
  disown "$job"   # no "Killed" notice from bash for a case that had to be ended
  local hit=0 hit2=0 missed=0 t_all=0 t_fault=0 vpid="" hung=0 stopped=0 r p
  local scanned=0 t_left=0 launcher_hung=0
  local anchor=j   # out: count AT from every rank joined (j), the N-th compute (cN), boot (b)
  case "$delay" in
    c*) anchor=${delay%%+*}; delay=${delay#*+} ;;
    b*) anchor=b; delay=${delay#b} ;;
  esac
  while kill -0 "$job" 2>/dev/null; do
    sleep 0.05
    tick
    if [ $(( NOW - t0 )) -gt $(( limit * 1000 )) ]; then
      hung=1
      { echo "chaos.sh: case over its ${limit} s limit; ranks without an outcome, last said:"
        for r in $(seq 0 $(( np - 1 ))); do
          [ -e "$dir/out.$r" ] ||
            echo "  rank $r (pid $(pid_of "$dir" $r)): $(grep "^\[rank $r\]" "$log" | tail -n 1)"
        done; } >> "$log"
      kill -KILL -- -"$job" 2>/dev/null
      for r in $(seq 0 $(( np - 1 ))); do
        p=$(pid_of "$dir" $r); [ -n "$p" ] && kill -KILL "$p" 2>/dev/null
      done
      break
    fi
    # every rank exited (some with an outcome), mpirun alone left: its hang after a killed
    # rank; once a second, not to read /proc 20 times a second
    if [ "$launcher" = mpirun ] && [ $(( NOW - scanned )) -ge 1000 ]; then
      scanned=$NOW
      if ls "$dir" | grep -q '^out\.' && ! others_running "$job"; then
        [ $t_left = 0 ] && t_left=$NOW
        if [ $(( NOW - t_left )) -ge $(( launcher_grace * 1000 )) ]; then
          launcher_hung=1
          echo "chaos.sh: every rank had exited; $mpirun still running ${launcher_grace} s later: ended it (a launcher hang)" >> "$log"
          kill -KILL -- -"$job" 2>/dev/null
          break
        fi
      else
        t_left=0
      fi
    fi
    if [ "$kind" = out ] && [ $hit = 0 ] && [ $missed = 0 ]; then
      if [ $t_all = 0 ]; then
        case "$anchor" in
          b) [ -e "$dir/boot.$victim" ] && t_all=$NOW ;;
          *) if [ "$(ls "$dir" | grep -c '^pid\.')" -ge "$np" ]; then
               if [ "$anchor" = j ] || [ "$(grep -c 'chaos: graph' "$log")" -ge "${anchor#c}" ]; then
                 t_all=$NOW
               fi
             fi ;;
        esac
      elif [ $(( NOW - t_all )) -ge "$delay" ]; then
        vpid=$(pid_of "$dir" "$victim")
        if [ ! -e "$dir/out.$victim" ] && kill -"$mode" "$vpid" 2>/dev/null; then
          hit=1; t_fault=$NOW
          echo "chaos.sh: SIG$mode to rank $victim (pid $vpid) $(( NOW - t0 )) ms into the case" >> "$log"
          [ "$mode" = STOP ] && stopped=1
        else
          missed=1
        fi
      fi
    fi
    if [ "$kind" = in ] && [ $hit = 0 ] && [ -e "$dir/fault.$victim" ]; then
      hit=1; t_fault=$NOW
      vpid=$(pid_of "$dir" "$victim")
      [ "$mode" = stop ] && stopped=1
    fi
    if [ $hit = 1 ] && [ "$victim2" -ge 0 ] && [ $hit2 = 0 ] && [ $(( NOW - t_fault )) -ge "$after2" ]; then
      p=$(pid_of "$dir" "$victim2")
      if [ -n "$p" ] && [ ! -e "$dir/out.$victim2" ] && kill -KILL "$p" 2>/dev/null; then
        hit2=1
        echo "chaos.sh: SIGKILL to rank $victim2 (pid $p) $(( NOW - t_fault )) ms after the first fault" >> "$log"
      else
        hit2=2   # too late
      fi
    fi
    if [ $stopped = 1 ]; then
      if [ "$cont" != never ] && [ $(( NOW - t_fault )) -ge "$cont" ]; then
        kill -CONT "$vpid" 2>/dev/null
        echo "chaos.sh: SIGCONT to rank $victim after $(( NOW - t_fault )) ms" >> "$log"
        stopped=2
      elif [ "$cont" = never ]; then
        # the others are through (an outcome, or gone): the frozen rank goes too
        local left=0
        for r in $(seq 0 $(( np - 1 ))); do
          [ "$r" = "$victim" ] && continue
          if [ ! -e "$dir/out.$r" ]; then
            p=$(pid_of "$dir" $r)
            if [ -z "$p" ] || kill -0 "$p" 2>/dev/null; then left=1; fi
          fi
        done
        if [ $left = 0 ]; then
          kill -KILL "$vpid" 2>/dev/null
          echo "chaos.sh: the others are through; SIGKILL to the frozen rank $victim" >> "$log"
          stopped=3
        fi
      fi
    fi
  done
  [ "$kind" = in ] && [ -e "$dir/fault.$victim" ] && hit=1
  [ "$kind" = out ] && [ $hit = 0 ] && missed=1
  tick; local secs; secs=$(( (NOW - t0) / 1000 )).$(( (NOW - t0) % 1000 / 100 ))
  INFO="${secs} s"
  [ "$gpus" != 0 ] && INFO="$INFO, sim GPUs $gpus"
  [ $launcher_hung = 1 ] && INFO="$INFO, launcher hung after its ranks exited (ended)"
  if [ $hung = 1 ]; then VERDICT=HANG; WHY=" no end within ${limit} s"; return; fi
  # the victim is gone for good if killed, or frozen and never continued
  local faulted=0 gone=0
  case "$mode" in kill|KILL) [ $hit = 1 ] && { faulted=1; gone=1; } ;;
                  stop|STOP) [ $hit = 1 ] && faulted=1; [ $stopped = 3 ] && gone=1 ;; esac
  [ $missed = 1 ] && INFO="$INFO, missed (the ranks were through before the fault)"
  # the loss named: "rank V lost ...", or a survivor fenced out by the quorum rule (no
  # majority left: with 2 ranks, rank 1 alone cannot tell rank 0's death from a
  # partition) "rank R was fenced out: it sees ranks ...V... gone"
  local vs="$victim"
  if [ $hit2 = 1 ]; then
    faulted=1; vs="($victim|$victim2)"; INFO="$INFO, second kill"
  fi
  # (also in a list: "rank 0, 2 lost", "without rank(s) 2")
  local named="rank(\(s\))? ([0-9]+, )*$vs([^0-9]|\$)|sees ranks ([0-9]+,)*$vs(,[0-9]+)* gone"
  local nok=0 nerr=0 bad="" why="" line st msg ph asked
  # recovery is asked of a reproducible case, except where none is promised: a rank whose
  # barrier failed on the loss (unless it goes on: CHAOS_BARRIER_GO_ON), or a rank other
  # than the victim that was fenced for want of a majority, stops there
  # (test_dist_chaos.c), and the others cannot finish their computes without it. A fence
  # is read from the outcomes and from the ranks' log (its warning): the call that fails
  # there may name the loss instead, when it failed on it first.
  asked=$(sed -n 's/.*reproducible \([01]\).*/\1/p' "$log" | head -n 1)
  [ "$CHAOS_BARRIER_GO_ON" = 1 ] || { grep -qs '^error phase=[^=]*barrier' "$dir"/out.* && asked=0; }
  local fr
  for fr in $(cat "$dir"/out.* "$log" 2>/dev/null |
              sed -n 's/.*rank \([0-9]*\) was fenced out: .* no majority.*/\1/p' | sort -u); do
    [ "$fr" = "$victim" ] || { [ $hit2 = 1 ] && [ "$fr" = "$victim2" ]; } || asked=0
  done
  grep -qs 'barriers_lost=[1-9]' "$dir"/out.* && INFO="$INFO, went on past a failed barrier"
  for r in $(seq 0 $(( np - 1 ))); do
    if [ ! -e "$dir/out.$r" ]; then
      if [ "$r" = "$victim" ] && [ $gone = 1 ]; then continue; fi
      if [ "$r" = "$victim2" ] && [ $hit2 = 1 ]; then continue; fi
      if [ "$r" = "$victim" ] && [ "$mode" = hang ]; then continue; fi
      bad=${bad:-CRASH}; why="$why rank $r ended without an outcome;"; continue
    fi
    line=$(cat "$dir/out.$r")
    case "$line" in
      ok*)
        nok=$((nok + 1))
        st=$(field "$line" fin)
        if [ "$st" != CASK_OK ] && [ $faulted = 0 ]; then
          bad=${bad:-UNEXPLAINED}; why="$why rank $r: finalize $st without a fault;"
        fi ;;
      wrong*)
        bad=WRONG; why="$why rank $r: $(field "$line" msg);" ;;
      error*)
        nerr=$((nerr + 1))
        st=$(field "$line" status); msg=$(field "$line" msg)
        ph=$(printf '%s\n' "$line" | sed -n 's/.*phase=\(.*\) status=.*/\1/p')
        if [ $faulted = 0 ]; then
          bad=${bad:-UNEXPLAINED}; why="$why rank $r: $st without a fault: $msg;"
        elif [ "$r" = "$victim" ]; then
          :   # continued after being given up: any clean error of its own
        elif ! { [ "$st" = CASK_ERR_PEER ] || { [ "$ph" = init ] && [ "$st" = CASK_ERR_UCX ]; }; } ||
             ! printf '%s' "$msg" | grep -Eq "$named"; then
          bad=${bad:-UNEXPLAINED}; why="$why rank $r: $st in $ph does not name the lost rank: $msg"
          # another rank named: suspected while alive, or gone after its own error
          why="$why (it names a rank that was not hit);"
        elif [ "$require_recovery" = 1 ] && [ "$asked" = 1 ] && [ "$ph" != init ]; then
          bad=${bad:-NOT-RECOVERED}; why="$why rank $r: $msg;"
        else
          [ -z "$why" ] && why=" survivors: $st in $ph after $(field "$line" t) s: $msg"
        fi ;;
      *) bad=${bad:-CRASH}; why="$why rank $r: unreadable outcome '$line';" ;;
    esac
  done
  if [ -n "$bad" ]; then VERDICT=$bad; WHY=$why; return; fi
  if [ $faulted = 1 ] && [ $nerr -gt 0 ]; then
    VERDICT=clean; WHY=$why
    [ $nok -gt 0 ] && INFO="$INFO, split ($nok ok, $nerr errors)"
    if [ "$mode" = stop ] || [ "$mode" = STOP ]; then
      [ "$cont" != never ] && [ "$cont" -lt "$CHAOS_PEER_TIMEOUT_MS" ] && [ $hit2 != 1 ] &&
        INFO="$INFO, suspected (frozen ${cont} ms < the peer timeout)"
    fi
  else
    VERDICT=ok; WHY=""
    [ $faulted = 1 ] && WHY=" (fault hit: no error)"
  fi
}

# ---- self-test: the verdicts can fail ----
if [ $selftest = 1 ]; then
  rc=0
  # a corrupted result must be WRONG, a task that never ends a HANG, a kill clean
  for t in "7 2 in:corrupt:1:0:0:0 WRONG" "7 2 in:hang:1:0:0:0 HANG" "7 2 in:kill:1:0:0:0 clean" \
           "7 2 none ok"; do
    set -- $t
    save=$limit; [ "$4" = HANG ] && limit=20
    run_case "$1" "$2" "$3" "$logs/selftest.$4"
    limit=$save
    echo "selftest: seed $1 np $2 $3 -> $VERDICT (want $4)$WHY"
    [ "$VERDICT" = "$4" ] || rc=1
  done
  # with recovery required: a kill in a compute of a reproducible case is recovered, and
  # NOT-RECOVERED when a survivor gives it up (test hook); a survivor without a majority
  # and a barrier's failure are not asked to recover (in-program faults: exact replays),
  # unless the ranks go on past the failed barrier (CHAOS_BARRIER_GO_ON)
  save=$require_recovery; require_recovery=1
  for t in "796333060 3 in:kill:1:0:0:29 ok" "796333060 3 in:kill:1:0:0:29 NOT-RECOVERED 0" \
           "796333079 2 in:kill:0:0:1:27 clean" "796333013 4 in:kill:2:0:2:-1 clean"; do
    set -- $t
    CASK_DIST_TEST_GIVE_UP=${5:-} run_case "$1" "$2" "$3" "$logs/selftest.r.$4"
    echo "selftest: recovery required: seed $1 np $2 $3${5:+ (rank $5 gives up)} -> $VERDICT (want $4)$WHY"
    [ "$VERDICT" = "$4" ] || rc=1
  done
  # the failed barrier's case again, its ranks going on: the next compute recovers
  CHAOS_BARRIER_GO_ON=1 run_case 796333013 4 in:kill:2:0:2:-1 "$logs/selftest.r.goon"
  echo "selftest: recovery required, going on past a failed barrier: seed 796333013 np 4 in:kill:2:0:2:-1 -> $VERDICT (want ok, went on)$WHY"
  { [ "$VERDICT" = ok ] && case "$INFO" in *"went on"*) true ;; *) false ;; esac; } || rc=1
  require_recovery=$save
  [ $rc = 0 ] && rm -rf "$logs"
  exit $rc
fi

if [ -n "$replay" ]; then
  [ -n "$rfault" ] || rfault=none
  run_case "$replay" "$nplo" "$rfault" "$logs/replay" "$rgpus"
  cat "$logs/replay/log"
  echo "replay: seed $replay np $nplo $rfault -> $VERDICT ($INFO)$WHY"
  case "$VERDICT" in ok|clean) exit 0 ;; *) exit 1 ;; esac
fi

# ---- the soak ----
[ -n "$seed0" ] || seed0=$(( $(date +%s) % 1000000 * 1000 ))
echo "chaos.sh: ${seconds} s$( [ "$cases" -gt 0 ] && echo " (or $cases cases)"), $nplo..$nphi ranks, sim GPUs in ${gpus_pct}% of the cases, launcher $launcher, seeds from $seed0, limit ${limit} s a case, peer timeout ${CHAOS_PEER_TIMEOUT_MS} ms, require recovery $require_recovery, barrier go-on $CHAOS_BARRIER_GO_ON, logs $logs"
declare -A count=()
tick; start=$NOW; n=0; failed=0
while :; do
  tick
  [ $(( NOW - start )) -ge $(( seconds * 1000 )) ] && break
  [ "$cases" -gt 0 ] && [ $n -ge "$cases" ] && break
  seed=$(( seed0 + n ))
  RANDOM=$seed
  np=$(( nplo + RANDOM % (nphi - nplo + 1) ))
  spec=$(pick_fault "$np")
  gpus=0
  if [ "$gpus_pct" -gt 0 ] && [ $(( RANDOM % 100 )) -lt "$gpus_pct" ]; then
    gpus=2; [ $(( RANDOM % 2 )) = 1 ] && gpus=2h
  fi
  n=$((n + 1))
  run_case "$seed" "$np" "$spec" "$logs/case.$seed" "$gpus"
  count[$VERDICT]=$(( ${count[$VERDICT]:-0} + 1 ))
  case "$INFO" in *split*) count[split]=$(( ${count[split]:-0} + 1 )) ;; esac
  case "$INFO" in *suspected*) count[suspected]=$(( ${count[suspected]:-0} + 1 )) ;; esac
  case "$INFO" in *missed*) count[missed]=$(( ${count[missed]:-0} + 1 )) ;; esac
  case "$INFO" in *second*) count[second]=$(( ${count[second]:-0} + 1 )) ;; esac
  case "$INFO" in *"went on"*) count[went-on]=$(( ${count[went-on]:-0} + 1 )) ;; esac
  case "$INFO" in *"sim GPUs"*) count[gpus]=$(( ${count[gpus]:-0} + 1 )) ;; esac
  case "$INFO" in *"launcher hung"*) count[launcher-hung]=$(( ${count[launcher-hung]:-0} + 1 )) ;; esac
  case "$VERDICT" in
    ok|clean)
      case "$verbose$INFO" in
        1*|*split*|*suspected*|*"launcher hung"*) echo "[$n] seed $seed np $np $spec -> $VERDICT ($INFO)$WHY" ;;
      esac
      rm -rf "$logs/case.$seed" ;;
    *)
      failed=$((failed + 1))
      echo "[$n] seed $seed np $np $spec -> $VERDICT ($INFO)$WHY"
      echo "    log: $logs/case.$seed/log"
      echo "    replay: $0 --replay $seed --np $np --fault $spec$( [ "$gpus" != 0 ] && echo " --sim-gpus $gpus")" ;;
  esac
done
summary="chaos.sh: $n cases in $(( (NOW - start) / 1000 )) s:"
for k in ok clean HANG WRONG CRASH UNEXPLAINED NOT-RECOVERED split suspected missed second went-on gpus launcher-hung; do
  summary="$summary $k ${count[$k]:-0}"
done
echo "$summary"
[ $failed = 0 ] && { rmdir "$logs" 2>/dev/null; exit 0; }
echo "chaos.sh: $failed bad case(s); logs in $logs"
exit 1
