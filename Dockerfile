# Queen broker image: Debian bookworm, two stages.
#   docker build -t queen .
#   docker run -e PG_HOST=... -p 6632:6632 queen
# See compose.yaml for PostgreSQL 15 plus two brokers.

# ---------------------------------------------------------------- build
FROM debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        build-essential pkg-config libpq-dev libzmq3-dev libmsgpack-dev \
        libsodium-dev libssl-dev libcurl4-openssl-dev node-llhttp \
        zlib1g-dev libsnappy-dev liblz4-dev libzstd-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# A separate BUILD dir, so objects from a host build tree are never reused
RUN make -j"$(nproc)" BUILD=/out /out/queen /out/queen-proxy /out/queen-sink /out/queenctl

# ---------------------------------------------------------------- run
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        libpq5 libzmq5 libmsgpackc2 libsodium23 libssl3 libcurl4 ca-certificates \
        zlib1g libsnappy1v5 liblz4-1 libzstd1 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd -r -d /var/lib/queen -s /usr/sbin/nologin queen \
 && mkdir -p /var/lib/queen/spool \
 && chown -R queen:queen /var/lib/queen
COPY --from=build /out/queen /out/queen-proxy /out/queen-sink /out/queenctl /usr/local/bin/
USER queen
WORKDIR /var/lib/queen
ENV HOST=0.0.0.0 \
    PORT=6632 \
    FILE_BUFFER_DIR=/var/lib/queen/spool
EXPOSE 6632
# Pushes accepted while PostgreSQL is down are spooled here: keep it
VOLUME ["/var/lib/queen/spool"]
# The broker drains in-flight requests on SIGTERM, then exits 0
STOPSIGNAL SIGTERM
# No curl in the image: bash's /dev/tcp speaks enough HTTP for /health
HEALTHCHECK --interval=5s --timeout=3s --start-period=30s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${PORT} && printf 'GET /health HTTP/1.0\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["/usr/local/bin/queen"]
