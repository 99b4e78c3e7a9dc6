-- wrk script: POST /api/reservations, every request a different (user, seat)
-- pair, so none is refused as a duplicate. Reads `token seatId` lines from
-- the file named by $TICKET_BENCH_LINES; request i uses token i mod U and
-- seat (i div U) mod S, spread over wrk's threads. A line of a request by
-- count (`token best:<concertId>:<count>` or `area:…`, prepare-enqueue
-- --best-every) is its own user's: enough users that none asks twice.
-- $TICKET_BENCH_THREADS must equal wrk's -t.
--
-- Noise, as real clients make it: with $TICKET_BENCH_DUPLICATES (a share,
-- e.g. 0.05) a request repeats the thread's previous one (a second click,
-- answered 409), with $TICKET_BENCH_UNKNOWN (e.g. 0.01) it names a seat that
-- does not exist (404). Answers are counted by class; done() prints them.
local counter = 1
local threads = {}

function setup(thread)
  thread:set("id", counter)
  table.insert(threads, thread)
  counter = counter + 1
end

function init(args)
  tokens, seats = {}, {}
  for line in io.lines(os.getenv("TICKET_BENCH_LINES")) do
    local token, seat = line:match("(%S+) (%S+)")
    table.insert(tokens, token)
    table.insert(seats, seat)
  end
  n = id - 1
  step = tonumber(os.getenv("TICKET_BENCH_THREADS") or "2")
  duplicates = tonumber(os.getenv("TICKET_BENCH_DUPLICATES") or "0")
  unknown = tonumber(os.getenv("TICKET_BENCH_UNKNOWN") or "0")
  math.randomseed(id)
  c2xx, c4xx, c5xx, other = 0, 0, 0, 0
end

-- With TICKET_BENCH_KEYED=1 every request carries its own Idempotency-Key,
-- which sends it down the one-transaction-per-request path: the baseline.
local keyed = os.getenv("TICKET_BENCH_KEYED") == "1"
local previous = nil

-- With TICKET_BENCH_SAMPLED=1 every request carries a traceparent of its own
-- with the sampled flag set, as a caller forcing tracing would send.
local sampled = os.getenv("TICKET_BENCH_SAMPLED") == "1"

local function hex(digits)
  local out = {}
  for i = 1, digits do
    out[i] = string.format("%x", math.random(0, 15))
  end
  out[1] = "a"
  return table.concat(out)
end

local function post(token, seat)
  local headers = { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token }
  if keyed then
    headers["Idempotency-Key"] = "bench-" .. id .. "-" .. n
  end
  if sampled then
    headers["traceparent"] = "00-" .. hex(32) .. "-" .. hex(16) .. "-01"
  end
  local kind, concert, count = seat:match("^(%a+):(%d+):(%d+)$")
  local body
  if kind == "best" then
    body = '{"concertId":' .. concert .. ',"category":"Stalls","count":' .. count .. '}'
  elseif kind == "area" then
    body = '{"concertId":' .. concert .. ',"area":"Floor","count":' .. count .. '}'
  else
    body = '{"seatId":' .. seat .. '}'
  end
  return wrk.format("POST", "/api/reservations", headers, body)
end

function request()
  local dice = math.random()
  if previous and dice < duplicates then
    return previous
  end
  local u = n % #tokens
  local s = math.floor(n / #tokens) % #seats
  local seat = seats[s + 1]
  if seats[u + 1]:find(":") then
    -- A request by count is its user's own line: one per user and pool.
    seat = seats[u + 1]
  end
  if dice < duplicates + unknown then
    seat = "2000000000"
  end
  n = n + step
  previous = post(tokens[u + 1], seat)
  return previous
end

function response(status, headers, body)
  if status >= 500 then
    c5xx = c5xx + 1
  elseif status >= 400 then
    c4xx = c4xx + 1
  elseif status >= 200 and status < 300 then
    c2xx = c2xx + 1
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local a, b, c, d = 0, 0, 0, 0
  for _, thread in ipairs(threads) do
    a = a + thread:get("c2xx")
    b = b + thread:get("c4xx")
    c = c + thread:get("c5xx")
    d = d + thread:get("other")
  end
  io.write(string.format("answers: 2xx=%d 4xx=%d 5xx=%d other=%d\n", a, b, c, d))
end
