# hookstorm in a container: the harness (`hookstorm`, which also serves the
# reference receiver as `hookstorm receiver`) and the standalone
# `hookstorm-receiver`, on a small Debian runtime, as a non-root user.
#
#   docker build -t hookstorm .
#   docker run --rm hookstorm list
#   docker run --rm --network host --user "$(id -u):$(id -g)" -v "$PWD:/work" -w /work \
#     -e HOOKSTORM_SECRETS_ACCT_A -e HOOKSTORM_SECRETS_ACCT_B -e HOOKSTORM_ADMIN_TOKEN \
#     hookstorm run --target hookstorm.toml --out reports
#
# --user: the container writes the reports as you, into your folder (as
# uid 10001 it could not write to a folder you own). docs/docker.md
# shows how to reach a receiver on the host or in a compose network.
# tests/paths/image.rs builds this runtime stage's filesystem (debootstrap
# of the same Debian release and packages) and runs the entrypoint in it,
# so keep the runtime stage to FROM, RUN, COPY --from=build, ENV, USER,
# WORKDIR, ENTRYPOINT and CMD.

# ---- build ------------------------------------------------------------
FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin hookstorm \
 && cargo build --release --locked -p hookstorm-receiver --bin hookstorm-receiver \
 && strip target/release/hookstorm target/release/hookstorm-receiver

# ---- runtime ----------------------------------------------------------
# The same Debian release as the build stage (glibc of the binaries).
# curl: the replay.sh a shrink writes sends its requests with it.
FROM debian:bookworm-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --create-home --home-dir /home/hookstorm hookstorm \
 && mkdir -p /work && chown hookstorm:hookstorm /work
COPY --from=build /src/target/release/hookstorm /usr/local/bin/hookstorm
COPY --from=build /src/target/release/hookstorm-receiver /usr/local/bin/hookstorm-receiver
# The scenarios run reads when no --scenario-dir is given (hookstorm would
# also find them beside the binary, under share/hookstorm).
COPY --from=build /src/scenarios /usr/local/share/hookstorm/scenarios
ENV HOOKSTORM_SCENARIO_DIR=/usr/local/share/hookstorm/scenarios
USER 10001:10001
WORKDIR /work
ENTRYPOINT ["/usr/bin/tini", "--", "hookstorm"]
CMD ["--help"]
