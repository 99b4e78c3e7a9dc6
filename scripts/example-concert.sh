#!/usr/bin/env bash
# Gives `make run` an example concert seated from a venue's plan
# (docs/examples/olympic-hall.json, pretix's format: premium rows, stalls,
# a balcony) and a standing floor of 3,000, once: skipped when a concert
# of that title exists.
#   scripts/example-concert.sh http://127.0.0.1:8080 ADMIN PASSWORD
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
base="$1" admin="$2" password="$3"
title="Olympic Hall (example seating plan)"
command -v curl >/dev/null 2>&1 || scripts/debian.sh curl
command -v jq >/dev/null 2>&1 || scripts/debian.sh jq
token="$(curl -fsS -X POST "$base/api/auth/login" -H 'content-type: application/json' \
  -d "$(jq -n --arg n "$admin" --arg p "$password" '{nickName: $n, password: $p}')" | jq -r .accessToken)"
if curl -fsS "$base/api/concerts?page=0&size=100" | jq -e --arg t "$title" '.content[] | select(.title == $t)' >/dev/null; then
  exit 0
fi
concert="$(curl -fsS -X POST "$base/api/concerts" -H "authorization: Bearer $token" -H 'content-type: application/json' \
  -d "$(jq -n --arg t "$title" '{title: $t, venue: "Olympic Hall", concertDate: "2030-09-09T18:00:00+09:00", timeZone: "Asia/Seoul",
        rows: 1, seatsPerRow: 1, holdSeconds: 300, maxSeatsPerOrder: 4,
        categories: [{name: "Premium", price: 150000, currency: "KRW"},
                     {name: "Stalls", price: 99000, currency: "KRW"},
                     {name: "Balcony", price: 66000, currency: "KRW"},
                     {name: "Standing", price: 88000, currency: "KRW"}],
        areas: [{name: "Floor", capacity: 3000, category: "Standing"}]}')" | jq -r .id)"
curl -fsS -X PUT "$base/api/concerts/$concert/seating-plan" -H "authorization: Bearer $token" \
  -H 'content-type: application/json' --data-binary @docs/examples/olympic-hall.json >/dev/null
echo "example concert $concert: $title"
