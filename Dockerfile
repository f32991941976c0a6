# hookstorm in a container: the harness (`hookstorm`, which also serves the
# reference receiver as `hookstorm receiver`) and the standalone
# `hookstorm-receiver`, on a small Debian runtime, as a non-root user.
#
#   docker build -t hookstorm .
#   docker run --rm hookstorm list
#   docker run --rm --network host -v "$PWD:/work" -w /work \
#     -e HOOKSTORM_SECRETS_ACCT_A -e HOOKSTORM_ADMIN_TOKEN \
#     hookstorm run --target hookstorm.toml --out reports
#
# docs/ci/docker.md shows how to reach a receiver on the host or in a
# compose network.

# ---- build ------------------------------------------------------------
FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin hookstorm \
 && cargo build --release --locked -p hookstorm-receiver --bin hookstorm-receiver \
 && strip target/release/hookstorm target/release/hookstorm-receiver

# ---- runtime ----------------------------------------------------------
FROM debian:bookworm-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --create-home --home-dir /home/hookstorm hookstorm \
 && mkdir -p /work && chown hookstorm:hookstorm /work
COPY --from=build /src/target/release/hookstorm /usr/local/bin/hookstorm
COPY --from=build /src/target/release/hookstorm-receiver /usr/local/bin/hookstorm-receiver
# The scenarios run reads when no --scenario-dir is given and ./scenarios is absent.
COPY --from=build /src/scenarios /usr/local/share/hookstorm/scenarios
ENV HOOKSTORM_SCENARIO_DIR=/usr/local/share/hookstorm/scenarios
USER 10001:10001
WORKDIR /work
ENTRYPOINT ["/usr/bin/tini", "--", "hookstorm"]
CMD ["--help"]
