# The parley image: one static binary FROM scratch, no shell, no package
# manager. The binary is built outside, as goreleaser does, because no
# registry (and so no golang base image) is reachable; build it all with
#
#     deploy/build-image [TAG]          (default parley:latest)
#
# which runs CGO_ENABLED=0 go build into dist/image/ and then docker build.
#
# Ports: 7070/tcp HTTP (web app, API, /metrics, /readyz), 7071/tcp internal
# traffic between nodes (mutual TLS), 7072/tcp+udp membership gossip.
# Every flag of `parley serve` is an environment variable: PARLEY_ and the
# flag's name in capitals with '_' for '-' (--join-token: PARLEY_JOIN_TOKEN).
FROM scratch

COPY dist/image/etc/ /etc/
COPY --chown=65532:65532 dist/image/data/ /data/
COPY --chown=65532:65532 dist/image/shared/ /shared/
COPY dist/image/parley /usr/local/bin/parley

ENV PATH=/usr/local/bin \
    PARLEY_DATA_DIR=/data \
    PARLEY_HTTP=0.0.0.0:7070 \
    PARLEY_CLUSTER=0.0.0.0:7071

USER 65532:65532
WORKDIR /data
VOLUME ["/data"]
EXPOSE 7070/tcp 7071/tcp 7072/tcp 7072/udp

HEALTHCHECK --interval=10s --timeout=6s --start-period=60s --retries=3 CMD ["parley", "health"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["parley"]
CMD ["serve"]
