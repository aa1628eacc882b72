#!/usr/bin/python3
# tests/decode/kneser_ney_reference.py
# Independent reference for interpolated modified Kneser-Ney (Chen & Goodman 1998, lmplz's
# adjusted counts): prints P(w | h) for every seen context h and every vocabulary word w.
#
# usage: kneser_ney_reference.py TEXT ORDER [D1 D2 D3]  ->  lines "context<TAB>word<TAB>prob"
import sys
from collections import defaultdict

FALLBACK = (0.5, 1.0, 1.5)


def main():
    text, order = sys.argv[1], int(sys.argv[2])
    fixed = tuple(float(x) for x in sys.argv[3:6]) if len(sys.argv) > 3 else None
    sentences = []
    with open(text) as f:
        for line in f:
            words = line.split()
            if words:
                sentences.append(["<s>"] + words + ["</s>"])
    vocab = sorted({w for s in sentences for w in s if w != "<s>"} | {"<unk>"})

    # Every occurrence of every n-gram, with the word before it (None at the sentence start).
    left = defaultdict(set)  # n-gram -> distinct words preceding it
    raw = defaultdict(int)
    for s in sentences:
        for n in range(1, order + 1):
            for i in range(len(s) - n + 1):
                g = tuple(s[i:i + n])
                if g == ("<s>",):
                    continue
                raw[g] += 1
                if i > 0:
                    left[g].add(s[i - 1])

    def adjusted(g):
        if len(g) == order or g[0] == "<s>":
            return raw.get(g, 0)
        return len(left.get(g, ()))

    by_order = defaultdict(dict)
    for g in raw:
        by_order[len(g)][g] = adjusted(g)

    discounts = {}
    for n in range(1, order + 1):
        if fixed:
            discounts[n] = fixed
            continue
        t = [0] * 5
        for c in by_order[n].values():
            if 1 <= c <= 4:
                t[c] += 1
        d = FALLBACK
        if all(t[1:5]):
            y = t[1] / (t[1] + 2 * t[2])
            cand = (1 - 2 * y * t[2] / t[1], 2 - 3 * y * t[3] / t[2], 3 - 4 * y * t[4] / t[3])
            if all(0 < cand[k] <= k + 1 for k in range(3)):
                d = cand
        discounts[n] = d

    def disc(n, c):
        return 0.0 if c == 0 else discounts[n][min(c, 3) - 1]

    # Per context: the adjusted counts of its continuations.
    follow = defaultdict(dict)
    for g, c in raw.items():
        follow[g[:-1]][g[-1]] = adjusted(g)

    memo = {}

    def prob(h, w):
        key = (h, w)
        if key in memo:
            return memo[key]
        n = len(h) + 1
        lower = 1.0 / len(vocab) if n == 1 else prob(h[1:], w)
        cont = follow.get(h)
        if not cont:
            p = lower  # unseen context: nothing to discount, all mass from the lower order
        else:
            total = sum(cont.values())
            gamma = sum(disc(n, c) for c in cont.values()) / total
            c = cont.get(w, 0)
            p = (c - disc(n, c)) / total + gamma * lower
        memo[key] = p
        return p

    contexts = {()}
    for s in sentences:
        for n in range(1, order):
            for i in range(len(s) - n + 1):
                g = tuple(s[i:i + n])
                if g[-1] != "</s>":
                    contexts.add(g)
    out = sys.stdout
    for h in sorted(contexts):
        for w in vocab:
            out.write("%s\t%s\t%.12g\n" % (" ".join(h), w, prob(h, w)))


if __name__ == "__main__":
    main()
