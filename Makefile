# The two commands that matter: `make run` and `make test`. Everything else
# is a convenience around them. Scripts live in scripts/.

.PHONY: run test lint fmt build db db-stop

## Database, migrations, API and worker on http://127.0.0.1:8080
## (PAYMENTS=localstripe: card payments against a local fake of Stripe)
run:
	@PAYMENTS="$(PAYMENTS)" scripts/run.sh

## Database, then the whole test suite
test:
	@scripts/test.sh

## Formatting, clippy and the workflow files, as CI checks them
lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	scripts/lint-workflows.sh

fmt:
	cargo fmt --all

build:
	cargo build --workspace --locked

## Start (or reuse) the private database and print its URL
db:
	@scripts/db.sh

db-stop:
	@scripts/db.sh stop
