#!/usr/bin/env python3
"""bench/sim_trace.py TRACE.json: a wave-by-wave summary of a bench-sim-gpus (or
test_sim_slow) trace (CASK_TRACE): for each wave (tasks between two `join` tasks), the
tasks each GPU ran, when each GPU finished its last one, how long the wave took and how
long each GPU sat idle in it. On a slowed simulated GPU a task's span is its virtual run
on the device (queued behind the task before it), so two tasks there back to back with
no gap mean the second was committed while the first ran."""
import json
import sys


def main():
    d = json.load(open(sys.argv[1]))
    ev = d['traceEvents'] if isinstance(d, dict) else d
    names = {}
    for e in ev:
        if e.get('ph') == 'M' and e.get('name') == 'thread_name':
            names[(e['pid'], e['tid'])] = e['args']['name']
    xs = sorted((e for e in ev if e.get('ph') == 'X'), key=lambda e: e['ts'])
    if not xs:
        print('no tasks in the trace')
        return 1
    t0 = xs[0]['ts']
    waves, cur = [], []
    for e in xs:
        track = names.get((e['pid'], e['tid']), str(e['tid']))
        if e['name'] == 'join':
            waves.append((cur, (e['ts'] - t0) / 1000))
            cur = []
        elif track.startswith('gpu '):
            gpu = int(track.split()[1])
            cur.append((gpu, (e['ts'] - t0) / 1000, (e['ts'] + e['dur'] - t0) / 1000))
    if cur:
        waves.append((cur, max(x[2] for x in cur)))
    gpus = sorted({g for w, _ in waves for g, _, _ in w})
    print('wave  start_ms  len_ms  ' + '  '.join('gpu%d:tasks,last_end,idle_ms' % g for g in gpus))
    start = 0.0
    tot = {g: 0 for g in gpus}
    for i, (w, end) in enumerate(waves):
        cols = []
        for g in gpus:
            mine = [x for x in w if x[0] == g]
            busy = sum(b - a for _, a, b in mine)
            last = max((b for _, _, b in mine), default=start)
            tot[g] += len(mine)
            cols.append('%2d, %7.2f, %6.2f' % (len(mine), last, (end - start) - busy))
        print('%4d  %8.2f  %6.2f  %s' % (i, start, end - start, '    '.join(cols)))
        start = end
    print('total tasks: ' + ', '.join('gpu%d %d' % (g, tot[g]) for g in gpus) +
          '; end %.2f ms' % start)
    return 0


if __name__ == '__main__':
    sys.exit(main())
