#!/usr/bin/env python3
"""localstripe (a stateful fake of Stripe's API) for one test: on a free
port of 127.0.0.1, printed on the first line of stdout, with nothing
written to disk (localstripe pickles its whole store into
/tmp/localstripe.pickle on every write, shared by every instance on the
machine, which makes writes slower and slower and lets tests see each
other's payments).

Its fake Stripe.js is taught what the real one does with a card Element
(scripts/localstripe-confirm.js): `confirmCardPayment` sends the card with
the publishable key and the client secret to confirm the PaymentIntent
(answered here, as Stripe answers it); localstripe's own only completes
3-D Secure for an intent a server confirmed already. The card numbers are
localstripe's (4242424242424242 pays, 4000000000000341 is declined when
charged, 4000000000000002 at once, 4000002500003155 asks for 3-D Secure).

Options: --fail-refunds N answers the first N refund creations 429 with
Retry-After: 1 (a provider asking to slow down), then serves them.
"""
import argparse
import os
import re
import socket

import localstripe
from aiohttp import web
from localstripe import resources, server
from localstripe.errors import UserError

HERE = os.path.dirname(os.path.realpath(__file__))
CONFIRM = re.compile(r"^/v1/payment_intents/(pi_\w+)/confirm$")


def stripe_js():
    with open(os.path.join(os.path.dirname(localstripe.__file__), "localstripe-v3.js")) as own:
        with open(os.path.join(HERE, "localstripe-confirm.js")) as added:
            return own.read() + "\n" + added.read()


def confirm_with_card(intent_id, data):
    """POST /v1/payment_intents/{id}/confirm from Stripe.js: the publishable
    key, the client secret and the card, as Stripe takes them."""
    if not str(data.get("key", "")).startswith("pk_"):
        raise UserError(401, "Unauthorized")
    intent = resources.PaymentIntent._api_retrieve(intent_id)
    if data.get("client_secret") != intent.client_secret:
        raise UserError(401, "Unauthorized")
    if intent.status not in ("requires_payment_method", "requires_confirmation"):
        raise UserError(400, "This PaymentIntent's status is %s." % intent.status,
                        {"code": "payment_intent_unexpected_state"})
    card = (data.get("payment_method_data") or {}).get("card")
    method = resources.PaymentMethod._api_create(type="card", card=card)
    if method._attaching_is_declined():
        raise UserError(402, "Your card was declined.",
                        {"code": "card_declined", "type": "card_error"})
    intent.payment_method = method.id
    intent.latest_charge = None
    intent._authentication_failed = False
    intent._confirm(on_failure_now=intent._report_failure)
    return server.json_response(intent._export())


@web.middleware
async def as_stripe_js(request, handler):
    if request.method == "GET" and request.path == "/js.stripe.com/v3/":
        return web.Response(text=stripe_js(), content_type="application/javascript")
    match = CONFIRM.match(request.path)
    if request.method == "POST" and match and server.get_api_key(request) is None:
        data = await server.get_post_data(request, remove_auth=False) or {}
        return confirm_with_card(match.group(1), data)
    return await handler(request)

resources.Store.dump_to_disk = lambda self: None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fail-refunds", type=int, default=0)
    args = parser.parse_args()
    app = server.app
    # Inside localstripe's error middleware (which answers its errors), before
    # its authentication (which knows no confirm by publishable key).
    app.middlewares.insert(1, as_stripe_js)
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
