# For machines with a container engine. Without one, `make image` builds the
# same image (a static manager on a non-root, shell-less base) as an OCI
# archive.
FROM golang:1.26 AS builder
ARG TARGETOS=linux
ARG TARGETARCH=amd64
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -tags grpcnotrace -trimpath -ldflags="-s -w" -o manager ./cmd/app-operator
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o etcd-snapshot ./cmd/etcd-snapshot
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o redis-snapshot ./cmd/redis-snapshot
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o redis-console ./cmd/redis-console

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager /manager
COPY --from=builder /workspace/etcd-snapshot /etcd-snapshot
COPY --from=builder /workspace/redis-snapshot /redis-snapshot
COPY --from=builder /workspace/redis-console /redis-console
USER 65532:65532
ENTRYPOINT ["/manager"]
