"""A proposer whose first two answers are refused (1,001 parameters each, over the limit) and
whose third is valid; then it ends."""
import json, sys
answers = 0
for line in sys.stdin:
    msg = json.loads(line)
    if msg["event"] == "propose":
        if answers == 3:
            print(json.dumps({"end": True}))
        else:
            for i in range(msg["n"]):
                if answers < 2:
                    ps = [f"p{k}" for k in range(1001)]
                    src = "(+ " + " ".join(f"(* {p} x)" for p in ps) + ")"
                    print(json.dumps({"src": src, "params": ps}))
                else:
                    print(json.dumps({"src": f"(+ (* a x) {i})", "params": ["a"]}))
        answers += 1
        sys.stdout.flush()
