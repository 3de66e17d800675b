# syntax=docker/dockerfile:1
# Multi-stage build: a static tickrelay binary, with the browser app (watch, play and
# replay pages, and the sim modules they run) embedded, on a distroless nonroot base.
# Build: make docker   (needs a Docker engine; CI does not run it)
# Run:   docker run -p 7400:7400 -p 7401:7401 -v tickrelay-replays:/replays \
#          -e TICKRELAY_TOKEN_SECRET=<hex> -e TICKRELAY_ADMIN_KEY=<key> tickrelay:dev
#
# Ports: 7400 the WebSocket endpoint (/v1/ws), the match API (/v1/matches) and the pages;
#        7401 /metrics, /healthz, /readyz (keep it off the public network).
# Replays go to /replays: mount a volume so unfinished matches resume after a restart.

# The build needs Go and Node >= 20 (esbuild and tsc for the pages, the AssemblyScript
# compiler for a sim module): Node's image, with Go's toolchain copied in.
FROM golang:1.26-bookworm AS go
FROM node:20-bookworm AS build
COPY --from=go /usr/local/go /usr/local/go
ENV PATH=/usr/local/go/bin:/root/go/bin:$PATH GOTOOLCHAIN=local CGO_ENABLED=0
WORKDIR /src
# Dependencies first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY web/package.json web/package-lock.json web/
COPY sim/games/hashchain/as/package.json sim/games/hashchain/as/package-lock.json sim/games/hashchain/as/
RUN npm ci --no-audit --no-fund --prefix web \
 && npm ci --no-audit --no-fund --prefix sim/games/hashchain/as
COPY . .
ARG VERSION=dev
# make build: the sim modules, the pages' bundle, then the binary (as on a developer's
# machine, so the image embeds the same app).
RUN make build BIN=/out VERSION=${VERSION} \
 && mkdir -p /out/replays

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tickrelay /tickrelay
COPY --from=build --chown=nonroot:nonroot /out/replays /replays
USER nonroot:nonroot
EXPOSE 7400 7401
VOLUME /replays
ENTRYPOINT ["/tickrelay", "serve"]
# Inside a container the relay must listen on every interface; the token secret and
# admin key come from the environment (TICKRELAY_TOKEN_SECRET, TICKRELAY_ADMIN_KEY).
CMD ["--listen", "0.0.0.0:7400", "--admin", "0.0.0.0:7401", "--replay-dir", "/replays", "--log-json"]
