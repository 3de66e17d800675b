# syntax=docker/dockerfile:1
# Multi-stage build: a static tickrelay binary on a distroless nonroot base.
# Build: make docker   (needs a Docker engine; CI does not run it)

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/tickrelay/tickrelay/internal/buildinfo.Version=${VERSION}" \
      -o /out/tickrelay ./cmd/tickrelay

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tickrelay /tickrelay
USER nonroot:nonroot
ENTRYPOINT ["/tickrelay"]
# Until `serve` lands (relay issue), the image runs the headless demo match.
CMD ["sim", "run", "--sim", "skirmish", "--seed", "1", "--players", "4"]
