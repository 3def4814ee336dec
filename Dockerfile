# ripe-cidr-collector in a container: a static musl binary, CA certificates for
# RIPEstat and DoH over https, nothing else (no shell, no curl). See README "Docker".
#
# From source (needs the Rust image from Docker Hub):
#   docker build -t ripe-cidr-collector .
# Around a static binary built on the host (no base image is pulled; see
# docker/test.sh), with a context directory holding `ripe-cidr-collector` and
# `ca-certificates.crt`:
#   docker build --target runtime-prebuilt -t ripe-cidr-collector -f Dockerfile DIR
#
# Both images are the stage `runtime-base` (user, volume, environment, health check,
# entrypoint) plus the same three paths. The prebuilt target comes before the Rust
# stage so that even the classic builder, which builds every stage up to the
# target, never pulls the Rust image for it.

ARG RUST_IMAGE=rust:1-alpine

# ---- what every image has -------------------------------------------------------
FROM scratch AS runtime-base
# The data directory: config.json, ripe.db (+ WAL), status.json, legacy files.
ENV RIPE_DATA_DIR=/data \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
# A numeric user needs no /etc/passwd in a scratch image.
USER 65532:65532
EXPOSE 8080
# For `daemon`, the default command; `serve` overrides it with `healthcheck api`
# (compose.yaml does). The daemon writes its heartbeat every 30 s.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["/ripe-cidr-collector", "healthcheck", "daemon"]
ENTRYPOINT ["/ripe-cidr-collector"]
CMD ["daemon"]

# ---- around a binary built on the host --------------------------------------------
FROM runtime-base AS runtime-prebuilt
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY ripe-cidr-collector /ripe-cidr-collector
# An empty directory that a new named volume takes its owner from (/bgp: the
# includes of the `bgp` profile's BIRD, compose.yaml).
COPY --chown=65532:65532 empty/ /data/
COPY --chown=65532:65532 empty/ /bgp/
VOLUME /data

# ---- from source ----------------------------------------------------------------
FROM ${RUST_IMAGE} AS build
# On Alpine the host target is musl and links statically; musl-dev has the C parts
# the bundled SQLite needs, ca-certificates the bundle copied into the image.
RUN apk add --no-cache musl-dev ca-certificates
WORKDIR /src
# .cargo/config.toml carries LIBSQLITE3_FLAGS (the trimmed SQLite).
COPY Cargo.toml Cargo.lock ./
COPY .cargo .cargo
COPY src src
COPY benches benches
RUN cargo build --release --locked \
 && mkdir -p /out/empty \
 && cp target/release/ripe-cidr-collector /out/ \
 && cp /etc/ssl/certs/ca-certificates.crt /out/

FROM runtime-base AS runtime
COPY --from=build /out/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/ripe-cidr-collector /ripe-cidr-collector
COPY --from=build --chown=65532:65532 /out/empty/ /data/
COPY --from=build --chown=65532:65532 /out/empty/ /bgp/
VOLUME /data
