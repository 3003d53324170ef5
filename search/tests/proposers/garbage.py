"""A proposer that answers every request with lines that are not candidates, one valid
candidate in the first answer, and a line far too long."""
import json, sys
first = True
for line in sys.stdin:
    msg = json.loads(line)
    if msg["event"] == "propose":
        for i in range(msg["n"]):
            if first and i == 0:
                print(json.dumps({"src": "(* a x)", "params": ["a"]}))
            elif first and i == 1:
                print("x" * (3 << 20))
            else:
                print("Sure! Here is a model: y = a*x")
        first = False
        sys.stdout.flush()
