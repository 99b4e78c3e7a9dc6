// Following one request in line until its decision: the request's event
// stream (Server-Sent Events read with fetch, so that the token goes in a
// header and never in a URL), and polling its status at the pace the
// server suggests whenever the stream cannot be had.

import { Problem, api, bearer } from "./api.js";

const DECIDED = new Set(["SUCCESS", "FAILED"]);

/**
 * Calls `update(status)` with each news of the request (`status` is the
 * status body: WAITING with `opensAt`, PENDING/PROCESSING with `position`
 * and `estimatedWaitMs`, then SUCCESS or FAILED) and resolves with the
 * decision. `signal` stops following.
 */
export async function follow(queueId, update, signal) {
  let streamFailures = 0;
  let outages = 0;
  for (;;) {
    if (signal?.aborted) throw new DOMException("stopped", "AbortError");
    if (streamFailures < 3) {
      try {
        const decision = await stream(queueId, update, signal);
        if (decision) return decision;
      } catch (e) {
        if (e.name === "AbortError") throw e;
        if (e instanceof Problem && !transient(e)) throw e;
      }
      streamFailures += 1;
    }
    // No stream (a proxy that buffers, an instance stopping): ask once,
    // then try the stream again or keep polling. The box office out of
    // reach or busy is waited out: the request keeps its place meanwhile.
    let status;
    try {
      status = await api("GET", `/api/reservations/status/${queueId}`, undefined, { signal });
    } catch (e) {
      if (!transient(e)) throw e;
      outages += 1;
      await pause(Math.min(1000 * 2 ** Math.min(outages, 4), 10_000), signal);
      continue;
    }
    outages = 0;
    update(status);
    if (DECIDED.has(status.status)) return status;
    await pause(Math.min(status.pollAfterMs || 1000, 10_000), signal);
  }
}

/** Worth asking again: no answer at all, too many requests, a server in trouble. */
function transient(e) {
  return e instanceof Problem && (e.status === 0 || e.status === 429 || e.status >= 500);
}

async function stream(queueId, update, signal) {
  const response = await fetch(`/api/reservations/status/${queueId}/events`, {
    headers: { Accept: "text/event-stream", Authorization: `Bearer ${bearer()}` },
    cache: "no-store",
    signal,
  });
  if (response.status === 204) return null;
  if (!response.ok) {
    let body = null;
    try {
      body = await response.json();
    } catch {
      body = null;
    }
    throw new Problem(response.status, body);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return null;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = parse(block);
      if (!event) continue;
      update(event.data);
      if (event.type === "decision") {
        reader.cancel().catch(() => {});
        return event.data;
      }
    }
  }
}

function parse(block) {
  let type = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (name === "event") type = value;
    else if (name === "data") data.push(value);
  }
  if (data.length === 0) return null;
  try {
    return { type, data: JSON.parse(data.join("\n")) };
  } catch {
    return null;
  }
}

function pause(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(new DOMException("stopped", "AbortError"));
    });
  });
}
