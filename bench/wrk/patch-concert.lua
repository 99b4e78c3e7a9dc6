-- wrk script: PATCH /api/concerts/1 as an operator, each request a new
-- title (so that every one writes, and, since issue 60, leaves an audit
-- entry). The operator's bearer token is $TICKET_BENCH_TOKEN.
local token = os.getenv("TICKET_BENCH_TOKEN")
local n = 0

function request()
  n = n + 1
  local body = string.format('{"title": "Bench night %d"}', n)
  return wrk.format("PATCH", "/api/concerts/1", {
    ["Authorization"] = "Bearer " .. token,
    ["Content-Type"] = "application/json",
  }, body)
end
