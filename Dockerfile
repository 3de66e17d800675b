# syntax=docker/dockerfile:1
# Multi-stage build: a static tickrelay binary on a distroless nonroot base.
# Build: make docker   (needs a Docker engine; CI does not run it)
# Run:   docker run -p 7400:7400 -p 7401:7401 -v tickrelay-replays:/replays \
#          -e TICKRELAY_TOKEN_SECRET=<hex> -e TICKRELAY_ADMIN_KEY=<key> tickrelay:dev
#
# Ports: 7400 the WebSocket endpoint (/v1/ws) and the match API (/v1/matches);
#        7401 /metrics, /healthz, /readyz (keep it off the public network).
# Replays go to /replays: mount a volume so unfinished matches resume after a restart.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/tickrelay/tickrelay/internal/buildinfo.Version=${VERSION}" \
      -o /out/tickrelay ./cmd/tickrelay \
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
