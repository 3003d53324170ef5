"""A proposer that proposes the lines of the JSON-lines file named by its argument, in order,
one per request, then ends."""
import json, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
for line in sys.stdin:
    msg = json.loads(line)
    if msg["event"] == "propose":
        print(lines.pop(0).strip() if lines else json.dumps({"end": True}))
        sys.stdout.flush()
