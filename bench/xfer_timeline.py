#!/usr/bin/env python3
"""xfer_timeline.py PREFIX [NRANKS]: where the time of cask's transfers between ranks
goes, from the CASK_DIST_XFER_LOG=PREFIX files (PREFIX.0, PREFIX.1, ...; distributed/dist_xlog.c)
and, when present, the CASK_TRACE=PREFIX.<rank>.json traces of the same run.

Pairs each send with its receive (gid, version, run, sender, receiver) and prints the
median (and 90th percentile) of each step, per kind (gpu: UCX from/into GPU memory; host):
  stream wait      send task started -> send handed to UCX (GPU: the CUDA host function
                   fired once the stream got past the producer)
  to peer          handed to UCX -> the message reached the receiver (rendezvous request)
  land             reached the receiver -> data in its buffer
  sender done      data landed -> UCX told the sender it is done (its task ends)
  consumer late    receive task started after the data landed: by how much
  consumer early   receive task waited for the data: for how long
From the traces: each rank's GPU busy time (union of its stream slices) and both ranks'
together over the computing span, and the kernels' summed durations by name: whether
the GPU idles (transfers exposed) or is busy throughout (time-shared)."""
import json
import os
import sys
from collections import defaultdict


def pct(v, p):
    if not v:
        return float('nan')
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]


def load_log(path):
    S, R, W = {}, {}, {}
    for line in open(path):
        f = line.split()
        if f[0] == 'S':
            gid, ver, run, to = map(int, f[1:5])
            S[(gid, ver, run, to)] = (f[5], float(f[6]), float(f[7]), float(f[8]))
        elif f[0] == 'R':
            gid, ver, run, frm = map(int, f[1:5])
            R[(gid, ver, run, frm)] = (f[5], float(f[6]), float(f[7]), float(f[8]))
        elif f[0] == 'W':
            gid, ver, run, frm = map(int, f[1:5])
            W[(gid, ver, run, frm)] = float(f[5])
    return S, R, W


def merge(iv):
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def busy(iv):
    return sum(b - a for a, b in merge(iv))


def traces(prefix, n):
    per = []
    for r in range(n):
        p = '%s.%d.json' % (prefix, r)
        if not os.path.exists(p):
            return
        d = json.load(open(p))
        org = int(d['otherData']['clock_origin_ns']) * 1e-9
        names = {}
        for e in d['traceEvents']:
            if e['ph'] == 'M' and e['name'] == 'thread_name':
                names[(e['pid'], e['tid'])] = e['args']['name']
        iv, kern = [], defaultdict(lambda: [0, 0.0])
        for e in d['traceEvents']:
            if e['ph'] != 'X':
                continue
            tn = names.get((e['pid'], e['tid']), '')
            if 'stream' in tn:
                a = org + e['ts'] * 1e-6
                iv.append((a, a + e['dur'] * 1e-6))
                kern[e['name']][0] += 1
                kern[e['name']][1] += e['dur'] * 1e-6
        per.append((iv, kern))
    lo = min(a for iv, _ in per for a, _ in iv)
    hi = max(b for iv, _ in per for _, b in iv)
    print('traces: GPU stream slices from %.3f s to %.3f s (%.1f ms)' % (lo, hi, (hi - lo) * 1e3))
    for r, (iv, kern) in enumerate(per):
        print('  rank %d: GPU busy %.1f ms; ' % (r, busy(iv) * 1e3) +
              ', '.join('%s %d x %.1f us = %.1f ms' % (k, c, t / c * 1e6, t * 1e3)
                        for k, (c, t) in sorted(kern.items(), key=lambda x: -x[1][1])[:4]))
    allv = [x for iv, _ in per for x in iv]
    print('  both ranks: GPU busy (union) %.1f ms of %.1f ms, idle %.1f ms' %
          (busy(allv) * 1e3, (hi - lo) * 1e3, (hi - lo - busy(allv)) * 1e3))


def main():
    prefix = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    logs = [load_log('%s.%d' % (prefix, r)) for r in range(n)]
    steps = defaultdict(lambda: defaultdict(list))
    for src in range(n):
        for (gid, ver, run, to), (kind, tt, tp, ts) in logs[src][0].items():
            if to >= n:
                continue
            rr = logs[to][1].get((gid, ver, run, src))
            if not rr:
                continue
            _, ta, tl, tw = rr
            st = steps[kind]
            st['stream wait'].append(tp - tt)
            st['to peer'].append(ta - tp)
            st['land'].append(tl - ta)
            st['sender done'].append(ts - tl)
            st['handed -> landed'].append(tl - tp)
            if tw > 0:
                st['consumer early'].append(tl - tw)
            w = logs[to][2].get((gid, ver, run, src))
            if w is not None:
                st['consumer late'].append(w - tl)
    for kind, st in steps.items():
        print('%s transfers: %d paired' % (kind, len(st['to peer'])))
        for k in ('stream wait', 'to peer', 'land', 'sender done', 'handed -> landed',
                  'consumer early', 'consumer late'):
            v = st.get(k, [])
            print('  %-17s n=%-5d median %8.1f us  p90 %8.1f us' %
                  (k, len(v), pct(v, 0.5) * 1e6, pct(v, 0.9) * 1e6))
    traces(prefix, n)


if __name__ == '__main__':
    main()
