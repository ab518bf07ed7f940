"""CI's webhook receiver: keeps every POSTed JSON body by path; GET /received returns them all."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

received: list[dict] = []
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with lock:
            received.append({"path": self.path, "body": json.loads(body or b"null")})
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        with lock:
            body = json.dumps(received).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


ThreadingHTTPServer(("0.0.0.0", 5001), Handler).serve_forever()
