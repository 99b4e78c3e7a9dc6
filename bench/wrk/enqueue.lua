-- wrk script: POST /api/reservations, every request a different (user, seat)
-- pair, so none is refused as a duplicate. Reads `token seatId` lines from
-- the file named by $TICKET_BENCH_LINES; request i uses token i mod U and
-- seat (i div U) mod S, spread over wrk's threads.
-- $TICKET_BENCH_THREADS must equal wrk's -t.
local counter = 1

function setup(thread)
  thread:set("id", counter)
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
end

-- With TICKET_BENCH_KEYED=1 every request carries its own Idempotency-Key,
-- which sends it down the one-transaction-per-request path: the baseline.
local keyed = os.getenv("TICKET_BENCH_KEYED") == "1"

function request()
  local u = n % #tokens
  local s = math.floor(n / #tokens) % #seats
  local headers = { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. tokens[u + 1] }
  if keyed then
    headers["Idempotency-Key"] = "bench-" .. id .. "-" .. n
  end
  n = n + step
  return wrk.format("POST", "/api/reservations", headers, '{"seatId":' .. seats[s + 1] .. '}')
end
