# A backend that reads a request body as Python's json.loads reads bytes (FastAPI, and the model
# servers built on it, read JSON so): it answers the "model" it read, or 400 when the body is not JSON
# to it. Prints its port, then serves until killed. Used by tests/integration/proxy-body-as-backends-read.test.ts.
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        try:
            status, answer = 200, {"model": json.loads(body).get("model")}
        except (ValueError, AttributeError):
            status, answer = 400, {"error": "not JSON"}
        out = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
