"""A proposer that answers one request, then crashes (exit status 3)."""
import json, sys
answered = 0
for line in sys.stdin:
    msg = json.loads(line)
    if msg["event"] == "propose":
        if answered:
            print("crash.py: out of ideas", file=sys.stderr)
            sys.exit(3)
        for _ in range(msg["n"]):
            print(json.dumps({"src": "(* a (exp (* b x)))", "params": ["a", "b"]}))
        sys.stdout.flush()
        answered += 1
