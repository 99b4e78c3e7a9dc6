#!/usr/bin/env bash
# Breaks each rule of the allocation core on purpose, one at a time, and
# lists the tests that catch it (issue 47: the property tests must fail
# when a rule is broken). Restores core/src after each; run it on a clean
# tree. Not part of `make test`.
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
set -u
run() {
  echo "== $1"
  cargo test -q -p ticket-core --lib allocation 2>&1 \
    | grep -E "^    domain::allocation::|^test result" | sed 's/^ *domain::allocation::/   fails: /'
  git checkout -q core/src
}
py() { python3 -c "import sys
p,a,b=sys.argv[1],sys.argv[2],sys.argv[3]
s=open(p).read(); assert a in s, a; open(p,'w').write(s.replace(a,b,1))" "$@"; }
A=core/src/domain/allocation.rs; B=core/src/domain/allocation/best.rs
py $A "                    won.extend(&decision.seats);" "                    if matches!(request.wants, Wants::Seats(_)) { won.extend(&decision.seats); }"
run "1 no seat twice: a best-available win not marked taken"
py $A "                        || seats_waited_in.contains(&id)
                        || pool" "                        || seats_waited_in.contains(&id)
                        || false && pool"
run "2 line order: a pool's earlier open requests elsewhere not waited for"
py $A "                        pools_waiting.insert(id);" ""
run "3 line order: a request deferred in the batch does not hold back its pool"
py $B "        .min_by_key(|block| key_of(block))" "        .max_by_key(|block| key_of(block))"
run "4 best: the worst block chosen"
py $B "                    last.row == place.row && last.position" "                    last.position"
run "5 adjacency: rows ignored"
py $B "    if count == 0 || chosen.len() < count as usize {" "    if count == 0 || chosen.len() + 1 < count as usize {"
run "6 all or nothing: a standing request one place short"
py $A "                    } else if shape.count > fan_room {" "                    } else if false {"
run "7 cap: best available past the fan's cap"
py $B "    if count == 0 || free.len() < count {" "    if count == 0 {"
run "8 capacity: more places than are free"
