#!/usr/bin/env python3
"""bench/dist_model.py: projects a distributed cask-knn run to 1..64 nodes from
per-link costs, with the plan cask's distributed layer makes
(docs/design/distributed-internals.md, "Plan").

    python3 bench/dist_model.py [--rate 5.3e12] [--alpha-us 5] [--beta-gbs 24] ...

The model, per compute (one GPU per node, P nodes):
  observations are already split (each rank owns N/P rows), references (M rows) are
  owned by rank 0 and sent to every other rank at exchange 0, one after the other
  (cask sends from the holder of the version, no tree yet):
      t_refs   = (P-1) * (alpha + ref_bytes / beta)
  phase 0 searches the local rows against all references:
      t_comp   = N * M / (P * rate)
  the final exchange gathers the results (int32 index + float32 distance per row) to
  rank 0, whose link receives all of them:
      t_gather = (P-1)/P * N * 8 / beta + (P-1) * alpha
  the end-of-run agreement: every rank sends P-1 DONE messages and waits for P-1:
      t_done   = (P-1) * alpha_msg + alpha
  the plan agreement (first compute only) costs the same as t_done.
Without the gather (results left on their owners) t_gather is 0.

Inputs: rate is cask-knn's measured pairs/s on one H100 (docs/knn.md); alpha_msg is
the measured software cost of one small cask message (bench-xport, 'cask api', half a
round trip); beta and alpha (wire latency) are those of the fabric, assumed (no
multi-node machine measured here): HDR InfiniBand 200 Gb/s ~ 24 GB/s, ~2 us.
Prints a table and one JSON object per P.

Joining the job and keeping it alive, per rank (second table), fitted on the curve
bench/dist_scale.sh measured on one host (--measured, bench/data/dist_scale_2core.jsonl:
P ranks oversubscribing C cores; a CPU-bound phase takes P/C times its own work there,
so each figure is scaled by min(C,P)/P before fitting it against the P-1 peers):
      t_setup  = t_local + t_fence + (P-1) * (t_ep + t_hello)
  t_local: ucp_init, worker, PMIx client (init of 2 ranks, less their exchange); t_fence:
  the launcher's blob exchange, a tree over the nodes, 2 * log2(P) * fence_alpha (assumed:
  PMIx daemons over TCP, --fence-us); t_ep, t_hello: creating one endpoint and its
  HELLO round (fitted, UCX_TLS=tcp,self: the transport between nodes)
      rss      = rss_base + (P-1) * rss_peer       (fitted VmRSS after the computes)
      eager    = (P-1) * credits * rndv_thresh     (bound on others' unconsumed eager
                                                    messages a rank may hold)
      idle cpu = (P-1) * hb_cost / heartbeat       (heartbeats sent and received, the
                                                    per-peer liveness checks; fitted)
      t_plan   = t_done above (first compute: PLAN to every rank)
"""
import argparse
import json
import math
import os
import statistics

MEASURED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                        "dist_scale_2core.jsonl")


def project(p, a):
    ref_bytes = a.m * 16            # float64 latitude/longitude
    alpha = (a.alpha_us + a.alpha_msg_us) * 1e-6
    beta = a.beta_gbs * 1e9
    t_refs = (p - 1) * (alpha + ref_bytes / beta)
    t_comp = a.n * a.m / (p * a.rate)
    t_gather = ((p - 1) / p * a.n * 8 / beta + (p - 1) * alpha) if a.gather else 0.0
    t_done = (p - 1) * a.alpha_msg_us * 1e-6 + alpha if p > 1 else 0.0
    total = t_refs + t_comp + t_gather + t_done
    return dict(nodes=p, t_refs_ms=t_refs * 1e3, t_comp_ms=t_comp * 1e3,
                t_gather_ms=t_gather * 1e3, t_done_ms=t_done * 1e3, total_ms=total * 1e3)


def fit_setup(path, label, cores):
    """Per-rank costs from bench/dist_scale.sh's JSON lines (one label)."""
    by = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if r.get("bench") == "dist_scale" and r.get("label") == label and "median" in r:
                by.setdefault(r["figure"], {}).setdefault(r["ranks"], []).append(r["median"])
    if not by:
        raise SystemExit(f"dist_model.py: no dist_scale records labelled {label!r} in {path}")
    med = {f: {p: statistics.median(v) for p, v in d.items()} for f, d in by.items()}

    def per_peer(fig, cpu_bound=True):
        """Least squares through the origin of the figure (scaled to one rank's own
        work where the ranks oversubscribed the cores) against the peers."""
        pts = med.get(fig, {})
        xs = [p - 1 for p in pts if p > 1]
        ys = [pts[p] * (min(cores, p) / p if cpu_bound else 1) for p in pts if p > 1]
        return sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)

    rss = med["rss_steady"]
    ps = sorted(rss)
    mx = statistics.mean(p - 1 for p in ps)
    my = statistics.mean(rss[p] for p in ps)
    slope = (sum((p - 1 - mx) * (rss[p] - my) for p in ps) /
             sum((p - 1 - mx) ** 2 for p in ps))
    p0 = min(med["init"])
    return dict(label=label, t_local_ms=med["init"][p0] - med["connect_exchange"][p0],
                t_ep_ms=per_peer("connect_endpoints"), t_hello_ms=per_peer("connect_handshakes"),
                rss_base_mib=my - slope * mx, rss_peer_kib=slope * 1024,
                idle_peer_pct=per_peer("idle_cpu", cpu_bound=False))


def project_setup(p, a, fit):
    t_fence = 2 * math.ceil(math.log2(p)) * a.fence_us * 1e-3 if p > 1 else 0.0
    t_peers = (p - 1) * (fit["t_ep_ms"] + fit["t_hello_ms"])
    alpha_ms = (a.alpha_us + a.alpha_msg_us) * 1e-3
    t_plan = (p - 1) * a.alpha_msg_us * 1e-3 + alpha_ms if p > 1 else 0.0
    setup = fit["t_local_ms"] + t_fence + t_peers if p > 1 else 0.0   # alone: no UCX
    return dict(nodes=p, setup_ms=setup, fence_ms=t_fence,
                peers_ms=t_peers, plan_ms=t_plan,
                rss_mib=fit["rss_base_mib"] + (p - 1) * fit["rss_peer_kib"] / 1024,
                eager_bound_mib=(p - 1) * a.credits * a.rndv_kib / 1024,
                heartbeats_per_s=(p - 1) * 1000.0 / a.heartbeat_ms,
                idle_cpu_pct=(p - 1) * fit["idle_peer_pct"] * 1000.0 / a.heartbeat_ms)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=float, default=2 ** 24, help="observations")
    ap.add_argument("--m", type=float, default=2 ** 14, help="references")
    ap.add_argument("--rate", type=float, default=5.3e12, help="pairs/s of one GPU")
    ap.add_argument("--alpha-us", type=float, default=2.0, help="wire latency, us")
    ap.add_argument("--alpha-msg-us", type=float, default=5.0,
                    help="software cost of one cask message, us")
    ap.add_argument("--beta-gbs", type=float, default=24.0, help="link bandwidth, GB/s")
    ap.add_argument("--no-gather", dest="gather", action="store_false",
                    help="results stay on their owners")
    ap.add_argument("--nodes", default="1,2,4,8,16,32,64")
    ap.add_argument("--measured", default=MEASURED,
                    help="bench/dist_scale.sh JSON lines to fit the per-rank costs on")
    ap.add_argument("--label", default="tcp,self",
                    help="which of its runs (UCX_TLS label; tcp,self: as between nodes)")
    ap.add_argument("--cores", type=int, default=2, help="cores of the measuring host")
    ap.add_argument("--fence-us", type=float, default=100.0,
                    help="launcher fence, per tree level and direction, us (assumed)")
    ap.add_argument("--heartbeat-ms", type=float, default=1000.0, help="CASK_UCX_HEARTBEAT_MS")
    ap.add_argument("--credits", type=int, default=64, help="CASK_UCX_CREDITS")
    ap.add_argument("--rndv-kib", type=float, default=16.0, help="CASK_UCX_RNDV_THRESH, KiB")
    a = ap.parse_args()
    rows = [project(int(p), a) for p in a.nodes.split(",")]
    base = rows[0]["total_ms"]
    print(f"N={a.n:.0f} M={a.m:.0f} rate={a.rate:.3g} pairs/s/GPU, alpha={a.alpha_us}+"
          f"{a.alpha_msg_us} us, beta={a.beta_gbs} GB/s, gather={'yes' if a.gather else 'no'}")
    print(f"{'nodes':>5} {'refs ms':>9} {'compute ms':>11} {'gather ms':>10} {'done ms':>8} "
          f"{'total ms':>9} {'speedup':>8} {'efficiency':>10}")
    for r in rows:
        s = base / r["total_ms"]
        print(f"{r['nodes']:>5} {r['t_refs_ms']:>9.3f} {r['t_comp_ms']:>11.3f} "
              f"{r['t_gather_ms']:>10.3f} {r['t_done_ms']:>8.3f} {r['total_ms']:>9.3f} "
              f"{s:>8.2f} {s / r['nodes']:>10.2f}")
    for r in rows:
        r["bench"] = "dist_model"
        r["gather"] = a.gather
        print(json.dumps(r))

    fit = fit_setup(a.measured, a.label, a.cores)
    print(f"\nper rank, fitted on {os.path.relpath(a.measured)} ({a.label}, {a.cores} cores): "
          f"local {fit['t_local_ms']:.1f} ms, per peer: endpoint {fit['t_ep_ms']:.3f} ms + "
          f"handshake {fit['t_hello_ms']:.3f} ms, {fit['rss_peer_kib']:.1f} KiB, "
          f"{fit['idle_peer_pct'] * 1e3:.2f} m% of a core at 1 s heartbeats; "
          f"RSS base {fit['rss_base_mib']:.1f} MiB; fence {a.fence_us:g} us per level (assumed)")
    print(f"{'nodes':>5} {'setup ms':>9} {'fence ms':>9} {'peers ms':>9} {'plan ms':>8} "
          f"{'rss MiB':>8} {'eager MiB':>10} {'hb/s':>6} {'idle %cpu':>10}")
    srows = [project_setup(int(p), a, fit) for p in a.nodes.split(",")]
    for r in srows:
        print(f"{r['nodes']:>5} {r['setup_ms']:>9.1f} {r['fence_ms']:>9.2f} "
              f"{r['peers_ms']:>9.1f} {r['plan_ms']:>8.3f} {r['rss_mib']:>8.1f} "
              f"{r['eager_bound_mib']:>10.0f} {r['heartbeats_per_s']:>6.0f} "
              f"{r['idle_cpu_pct']:>10.3f}")
    for r in srows:
        r["bench"] = "dist_model_setup"
        r["label"] = a.label
        print(json.dumps(r))


if __name__ == "__main__":
    main()
