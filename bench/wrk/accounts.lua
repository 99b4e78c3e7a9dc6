-- wrk script: sign-ups or logins, each an Argon2 hash on the server.
-- $TICKET_BENCH_MODE=signup: every request a new account (nicknames of the
-- run, thread and count, so none collides); =login: logins round robin
-- over the $TICKET_BENCH_ACCOUNTS accounts acct1, acct2, … made before.
-- Answers are counted by class; done() prints them.
local counter = 1

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

function init(args)
  mode = os.getenv("TICKET_BENCH_MODE") or "signup"
  accounts = tonumber(os.getenv("TICKET_BENCH_ACCOUNTS") or "64")
  run = os.getenv("TICKET_BENCH_RUN") or "0"
  n = 0
  c2xx, c4xx, c5xx, other = 0, 0, 0, 0
end

local headers = { ["Content-Type"] = "application/json" }

function request()
  n = n + 1
  if mode == "login" then
    local nick = "acct" .. ((n * 7 + id) % accounts + 1)
    return wrk.format("POST", "/api/auth/login", headers,
      '{"nickName":"' .. nick .. '","password":"bench-password-1"}')
  end
  return wrk.format("POST", "/api/users", headers,
    '{"nickName":"s' .. run .. "t" .. id .. "n" .. n .. '","password":"bench-password-1"}')
end

function response(status)
  if status >= 200 and status < 300 then c2xx = c2xx + 1
  elseif status >= 400 and status < 500 then c4xx = c4xx + 1
  elseif status >= 500 then c5xx = c5xx + 1
  else other = other + 1 end
end
