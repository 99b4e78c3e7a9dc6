//! Integration tests: the real API on port 0 against a fresh database on a
//! real MySQL/MariaDB server (DATABASE_URL; `make test` provides one).

mod accounts;
mod auth;
mod authorization;
mod availability;
mod binaries;
mod check_in;
mod checkout;
mod clocks;
mod concerts;
mod deletes;
mod enqueue_groups;
mod fan_cap;
mod health;
mod helpers;
mod leaving;
mod limits;
mod lottery;
mod mail;
mod memory;
mod metrics;
mod openapi;
mod otlp;
mod page;
mod presale;
mod prices;
mod proof_of_work;
mod reservations;
mod sale;
mod seats;
mod status_events;
mod tickets;
mod users;
mod validation;
mod waiting_list;
mod walk;
