"""A proposer that forks a long-sleeping child it never waits for (its pid goes to the file
named by argv[1]), answers every request with one program, and exits when told to stop."""
import json, subprocess, sys
child = subprocess.Popen(["sleep", "60"])
with open(sys.argv[1], "w") as f:
    f.write(str(child.pid))
for line in sys.stdin:
    msg = json.loads(line)
    if msg["event"] == "propose":
        for _ in range(msg["n"]):
            print(json.dumps({"src": "(* a x)", "params": ["a"]}))
        sys.stdout.flush()
    elif msg["event"] == "stop":
        break
