# Images for ticket-api and ticket-worker (one image, two binaries).
#
#   docker build -t ticket:0.1.0 .
#   docker run ticket:0.1.0 ticket-api --help
#
# Build stage: the workspace's own toolchain and lock file. Runtime stage:
# distroless (glibc, CA certificates, no shell, no package manager), running
# as the unprivileged user 65532.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
# Dependencies first, in a layer of their own: built against stub sources
# from the manifests and the lock file alone, so a change to the project's
# code reuses them and rebuilds only the project's crates.
COPY Cargo.toml Cargo.lock ./
COPY core/Cargo.toml core/
COPY api/Cargo.toml api/
COPY worker/Cargo.toml worker/
COPY bench/Cargo.toml bench/
RUN for crate in core api worker bench; do \
      mkdir -p "$crate/src" && echo 'fn main() {}' > "$crate/src/main.rs" && touch "$crate/src/lib.rs"; \
    done \
 && cargo build --release --locked -p ticket-api -p ticket-worker \
 && rm -rf core/src api/src worker/src bench/src \
      target/release/.fingerprint/ticket-* target/release/deps/ticket_* target/release/deps/libticket_*
COPY . .
RUN cargo build --release --locked -p ticket-api -p ticket-worker \
 && mkdir /out \
 && cp target/release/ticket-api target/release/ticket-worker /out/

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/ticket-api /out/ticket-worker /usr/local/bin/
USER 65532:65532
# The API; the worker image runs `ticket-worker` instead (see the Helm chart).
ENV TICKET_API_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/ticket-api"]
