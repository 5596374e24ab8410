# syntax=docker/dockerfile:1
# branch-atm in a small image: built in the Rust image, run from distroless (glibc,
# CA certificates, no shell, no package manager) as a non-root user. Nothing is written
# to the image's filesystem when the store is PostgreSQL, so it runs with --read-only;
# with the SQLite default, mount a volume at /data (BRANCH_ATM_DATABASE_URL below).
#
#   docker build -t branch-atm .
#   docker run --read-only -p 8080:8080 \
#     -e BRANCH_ATM_DATABASE_URL=postgres://branch_atm:secret@db:5432/branch_atm branch-atm
#
# deploy/compose.yaml runs the tested cluster's topology (PostgreSQL, Redis, three
# instances, HAProxy) with this image.

FROM rust:1.95-bookworm AS build
WORKDIR /src
# Dependencies first, so a change to the workspace's own code rebuilds only that.
COPY Cargo.toml Cargo.lock ./
COPY vendor vendor
COPY crates crates
COPY migrations migrations
COPY docs/reference docs/reference
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin branch-atm \
    && cp target/release/branch-atm /branch-atm

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /branch-atm /usr/local/bin/branch-atm
# Every instance's settings come from BRANCH_ATM_* variables (docs/configuration.md):
# the same ones serve the health check below.
ENV BRANCH_ATM_LISTEN=0.0.0.0:8080 \
    BRANCH_ATM_DATABASE_URL=sqlite:///data/branch-atm.db \
    BRANCH_ATM_LOG_FORMAT=json \
    BRANCH_ATM_NO_DEMO_DATA=true
USER nonroot:nonroot
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=2 \
    CMD ["/usr/local/bin/branch-atm", "health-check"]
ENTRYPOINT ["/usr/local/bin/branch-atm"]
CMD ["serve"]
