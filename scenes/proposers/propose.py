#!/usr/bin/env python3
"""An example proposer for `ndvm search` (Python standard library only, no network).

It stands where a language model would: it reads the search's messages on standard input, one
JSON object a line, and answers every `propose` request with exactly `n` candidates on standard
output (docs/search.md, "The proposer protocol"). Its "model" is a small grammar of building
blocks over the data's inputs, products and sums of two blocks, and a memory of which blocks
appeared in the successful results so far, which it proposes more often.

A real proposer replaces `propose()` with a call to an endpoint, prompting with the best results
so far. Keep standard output for answers only; write diagnostics to standard error.

    ndvm search scenes/search_command.scene.ron --calibrations 2000
"""

import json
import random
import sys

BLOCKS = [
    "(exp (* {p} {x}))",
    "(sin (+ (* {p} {x}) {p}))",
    "(cos (* {p} {x}))",
    "(+ {p} (* {p} {x}))",
    "(* {p} {x})",
    "(exp (- 0 (* {p} {x} {x})))",
    "(/ 1 (+ 1 (* {p} {x} {x})))",
]
PARAMS = "abcdefgh"


def fill(template, x, used):
    """Fills `{p}` with fresh parameter names and `{x}` with the input."""
    out = template
    while "{p}" in out:
        out = out.replace("{p}", PARAMS[len(used)], 1)
        used.append(PARAMS[len(used)])
    return out.replace("{x}", x)


def propose(rng, inputs, weights):
    x = rng.choice(inputs)
    used = []
    first = rng.choices(range(len(BLOCKS)), weights)[0]
    second = rng.choices(range(len(BLOCKS)), weights)[0]
    body = "(* {p} (* " + BLOCKS[first] + " " + BLOCKS[second] + "))"
    if rng.random() < 0.3:
        body = "(+ (* {p} " + BLOCKS[first] + ") (* {p} " + BLOCKS[second] + "))"
    src = fill(body, x, used)
    return {"src": src, "params": used, "blocks": [first, second]}


def main():
    rng = random.Random(0)
    inputs = ["x"]
    weights = [1.0] * len(BLOCKS)
    blocks_of = {}
    for line in sys.stdin:
        msg = json.loads(line)
        event = msg.get("event")
        if event == "start":
            rng = random.Random(msg["seed"])
            inputs = msg["inputs"] or inputs
        elif event == "result":
            # Blocks of successful candidates are proposed more often.
            if msg["success"] and msg["src"] in blocks_of:
                for b in blocks_of[msg["src"]]:
                    weights[b] = min(weights[b] + 0.05, 5.0)
        elif event == "propose":
            for _ in range(msg["n"]):
                cand = propose(rng, inputs, weights)
                blocks_of[cand["src"]] = cand.pop("blocks")
                print(json.dumps(cand))
            sys.stdout.flush()
        elif event == "stop":
            break
    print(f"propose.py: {len(blocks_of)} candidates proposed", file=sys.stderr)


if __name__ == "__main__":
    main()
