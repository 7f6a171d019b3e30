"""Wait until a llama-server started by a tests/gpu script answers /health (its ExecStartPost's job on a systemd
host; the lent GPU machine has no systemd). Usage: python3 tests/gpu/wait_health.py URL"""
import sys
import time
import urllib.request

for _ in range(600):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=5).close()
        break
    except OSError:
        time.sleep(0.5)
else:
    raise SystemExit("llama-server did not answer %s within 300 s" % sys.argv[1])
