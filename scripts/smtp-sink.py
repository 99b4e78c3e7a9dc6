#!/usr/bin/env python3
"""A real SMTP server for the mail tests (aiosmtpd, Debian's
python3-aiosmtpd): takes every message, parses it as MIME with Python's
email package, and prints one JSON line a message on stdout (after a first
line "listening PORT", and a line "receiving MESSAGE-ID" as each
message's DATA ends, before it is answered), so that a test reads what arrived as a mail reader
would see it.

  smtp-sink.py [--port P] [--fail-first N] [--reject ADDRESS]... [--delay-ms MS]

--fail-first N: the first N messages are answered 451 (try again later).
--reject ADDRESS: RCPT TO that address is answered 550 (refused for good).
--delay-ms MS: wait that long before answering a message's DATA (a relay
  can be killed while it waits).
--quiet: read only each message's headers, print only its Message-ID (a
  benchmark's sink, which should cost as little as a server can).
"""

import argparse
import asyncio
import base64
import email
import email.parser
import email.policy
import json
import signal
import sys

from aiosmtpd.controller import Controller


def part_summary(part):
    summary = {
        "contentType": part.get_content_type(),
        "contentId": part.get("Content-ID"),
        "disposition": part.get_content_disposition(),
        "defects": [str(d) for d in part.defects],
    }
    if part.is_multipart():
        return summary
    payload = part.get_payload(decode=True) or b""
    if part.get_content_maintype() == "text":
        summary["text"] = payload.decode(part.get_content_charset() or "utf-8", "replace")
    else:
        summary["base64"] = base64.b64encode(payload).decode("ascii")
    return summary


class Sink:
    def __init__(self, args):
        self.args = args
        self.seen = 0

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower() in self.args.reject:
            return "550 5.1.1 no such mailbox here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.seen += 1
        if self.args.quiet:
            headers = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(envelope.content)
            print(json.dumps({"messageId": headers.get("Message-ID")}), flush=True)
            return "250 2.0.0 accepted"
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        # Said before any wait: a test may kill the sender now, mid-send.
        print(f"receiving {message.get('Message-ID')}", flush=True)
        if self.args.delay_ms:
            await asyncio.sleep(self.args.delay_ms / 1000)
        if self.seen <= self.args.fail_first:
            return "451 4.3.0 try again later"
        line = {
            "mailFrom": envelope.mail_from,
            "rcptTos": envelope.rcpt_tos,
            "messageId": message.get("Message-ID"),
            "from": message.get("From"),
            "to": message.get("To"),
            "subject": message.get("Subject"),
            "date": message.get("Date"),
            "contentType": message.get_content_type(),
            "defects": [str(d) for d in message.defects],
            "parts": [part_summary(p) for p in message.walk()],
        }
        print(json.dumps(line), flush=True)
        return "250 2.0.0 accepted"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--reject", action="append", default=[])
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    args.reject = [a.lower() for a in args.reject]
    port = args.port
    if port == 0:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    controller = Controller(Sink(args), hostname="127.0.0.1", port=port)
    controller.start()
    print(f"listening {port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.new_event_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # The test's end (its pipe closed) ends the server too.
    loop.add_reader(sys.stdin.fileno(), stop.set)
    loop.run_until_complete(stop.wait())
    controller.stop()


if __name__ == "__main__":
    main()
