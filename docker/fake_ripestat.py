"""A stand-in for RIPEstat for docker/test.sh: listens on the address given (the host
side of the compose network), answers every GET with the JSON file given, records
the request paths in a log file, prints its port."""
import http.server
import sys

address = sys.argv[1]
body = open(sys.argv[2], "rb").read()
log = open(sys.argv[3], "a", buffering=1)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        log.write(self.path + "\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer((address, 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
