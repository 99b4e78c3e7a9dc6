#!/usr/bin/env python3
"""A webhook receiver for the fault tests: answers every POST 204 and
appends its Ticket-Event-Id header to a file, one per line (duplicates
included: delivery is at least once), so that the test can check that every
event in the outbox arrived. Prints "listening PORT" once it listens.

  webhook_receiver.py OUT_FILE
"""

import http.server
import sys
import threading

out = open(sys.argv[1], "a", buffering=1)
lock = threading.Lock()


class Receiver(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        event = self.headers.get("Ticket-Event-Id", "")
        with lock:
            out.write(event + "\n")
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
print(f"listening {server.server_address[1]}", flush=True)
server.serve_forever()
