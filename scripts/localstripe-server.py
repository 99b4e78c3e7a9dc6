#!/usr/bin/env python3
"""localstripe (a stateful fake of Stripe's API) for one test: on a free
port of 127.0.0.1, printed on the first line of stdout, with nothing
written to disk (localstripe pickles its whole store into
/tmp/localstripe.pickle on every write, shared by every instance on the
machine, which makes writes slower and slower and lets tests see each
other's payments).

Options: --fail-refunds N answers the first N refund creations 429 with
Retry-After: 1 (a provider asking to slow down), then serves them.
"""
import argparse
import socket

from aiohttp import web
from localstripe import resources, server

resources.Store.dump_to_disk = lambda self: None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fail-refunds", type=int, default=0)
    args = parser.parse_args()
    app = server.app
    if args.fail_refunds:
        left = {"n": args.fail_refunds}

        @web.middleware
        async def slow_down(request, handler):
            if request.method == "POST" and request.path == "/v1/refunds" and left["n"] > 0:
                left["n"] -= 1
                return web.json_response(
                    {"error": {"message": "Too many requests", "type": "rate_limit_error"}},
                    status=429,
                    headers={"Retry-After": "1"},
                )
            return await handler(request)

        app.middlewares.insert(0, slow_down)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    print(sock.getsockname()[1], flush=True)
    web.run_app(app, sock=sock, print=None, access_log=None, handle_signals=True)


if __name__ == "__main__":
    main()
