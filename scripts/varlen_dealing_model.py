"""The balance model behind the varlen tile list's dealing (docs/attention-varlen.md): the folded
units of a packed batch (a Q tile's KV blocks as its cost, a unit = a head's longest and shortest
Q tile of one sequence; sequences longest first, as fwd_varlen_prepare orders them) dealt over G
persistent CTAs four ways, each CTA's work the sum of its units' costs, and the balance = mean /
max over the CTAs (1.0: no CTA idles at the end):
  static     CTA i takes units i, i + G, ... (the list's order; the dealing before 2026-12-06)
  snake      round k dealt in order when k is even, reversed when odd
  lpt        list scheduling: each unit to the CTA that gets free first (the dynamic dealing's model)
  ahead1     as lpt, but a CTA claims its next unit when it starts the current one
Per-tile overheads, the tiles' ragged rows and L2 effects are not modelled.

    python3 scripts/varlen_dealing_model.py [--sms 132]
"""
import argparse
import heapq

MIX16 = [7984, 2500, 1300, 900, 700, 500, 450, 400, 350, 300, 250, 200, 150, 120, 100, 180]


def units(lens, heads, bm, bn, causal):
    seqs = []
    for n in lens:
        m = (n + bm - 1) // bm
        costs = [((min(n, (i + 1) * bm) if causal else n) + bn - 1) // bn for i in range(m)]
        us = []
        for _ in range(heads):
            lo, hi = 0, m - 1
            while lo < hi:
                us.append(costs[hi] + costs[lo])
                lo, hi = lo + 1, hi - 1
            if lo == hi:
                us.append(costs[lo])
        seqs.append((max(costs), len(us), us))
    seqs.sort(key=lambda s: (-s[0], -s[1]))
    return [u for s in seqs for u in s[2]]


def static(us, g):
    w = [0] * g
    for j, u in enumerate(us):
        w[j % g] += u
    return max(w)


def snake(us, g):
    w = [0] * g
    for j, u in enumerate(us):
        k, i = divmod(j, g)
        w[i if k % 2 == 0 else g - 1 - i] += u
    return max(w)


def lpt(us, g):
    h = [0] * g
    for u in us:
        heapq.heappush(h, heapq.heappop(h) + u)
    return max(h)


def ahead1(us, g):
    n = len(us)
    ev, cur, res = [], {}, {}
    for i in range(min(g, n)):
        cur[i] = i
    nxt = min(g, n)
    for i in range(min(g, n)):
        if nxt < n:
            res[i], nxt = nxt, nxt + 1
        heapq.heappush(ev, (us[cur[i]], i))
    end = 0
    while ev:
        t, i = heapq.heappop(ev)
        end = max(end, t)
        if i in res:
            cur[i] = res.pop(i)
            if nxt < n:
                res[i], nxt = nxt, nxt + 1
            heapq.heappush(ev, (t + us[cur[i]], i))
    return end


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sms", type=int, default=132)
    g = ap.parse_args().sms
    # (hdim, Q tile rows, KV tile keys, heads at hidden 2048) of the options rows
    for hd, bm, bn, heads in ((64, 192, 128, 32), (128, 128, 128, 16), (256, 128, 64, 8)):
        for causal in (0, 1):
            us, eq = units(MIX16, heads, bm, bn, causal), units([4096] * 4, heads, bm, bn, causal)
            mean, mean_eq = sum(us) / g, sum(eq) / g
            print(f"hdim {hd} causal {causal}: mix16 static {mean / static(us, g):.3f} snake {mean / snake(us, g):.3f} "
                  f"lpt {mean / lpt(us, g):.3f} ahead1 {mean / ahead1(us, g):.3f} | 4 x 4096 static "
                  f"{mean_eq / static(eq, g):.3f}")


if __name__ == "__main__":
    main()
