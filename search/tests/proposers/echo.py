"""A proposer that records what it is sent (to the file named by its argument) and proposes
the same small candidates every time, ending after three answers."""
import json, sys
log = open(sys.argv[1], "w")
answers = 0
for line in sys.stdin:
    log.write(line)
    log.flush()
    msg = json.loads(line)
    if msg["event"] == "propose":
        if answers == 3:
            print(json.dumps({"end": True}))
        else:
            for i in range(msg["n"]):
                print(json.dumps({"src": f"(+ (* a x) {i})", "params": ["a"]}))
        answers += 1
        sys.stdout.flush()
