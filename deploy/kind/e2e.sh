#!/usr/bin/env bash
# The chart in a real cluster, where Docker and kind exist (a workstation, a CI runner with Docker): builds the
# image, loads it into a throwaway kind cluster, starts PostgreSQL, Redis and Kafka (backing-services.yaml),
# installs the chart with values.yaml (BUS=kafka), runs `helm test`, then drives the API through the edge
# (cluster-checks.mjs: models, an account and a key, chat plain and streamed, embeddings, an image, a video job to
# its file, the bill) with `kubectl port-forward`.
#
#   deploy/kind/e2e.sh                 # KEEP_CLUSTER=1 leaves the cluster up for a look around
#
# Needs docker, kind, kubectl, helm and node on PATH, and the network to pull postgres, redis and apache/kafka.
# It is not run in CI here: those machines have no Docker engine and no cluster (docs/deploy.md says what the
# offline checks cover instead).
set -euo pipefail
cd "$(dirname "$0")/../.."

CLUSTER=${CLUSTER:-model-gateway-e2e}
NAMESPACE=gateway-e2e
RELEASE=gw
IMAGE=model-gateway:e2e
PORT=18080

for tool in docker kind kubectl helm node; do
  command -v "$tool" >/dev/null || { echo "e2e.sh: $tool is not on PATH" >&2; exit 2; }
done
docker info >/dev/null 2>&1 || { echo "e2e.sh: no Docker engine answers (docker info failed)" >&2; exit 2; }

cleanup() {
  [[ -n "${FORWARD_PID:-}" ]] && kill "$FORWARD_PID" 2>/dev/null || true
  if [[ "${KEEP_CLUSTER:-}" != 1 ]]; then kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

echo "--- image"
docker build -f deploy/Dockerfile -t "$IMAGE" .

echo "--- cluster"
kind get clusters | grep -qx "$CLUSTER" || kind create cluster --name "$CLUSTER" --wait 120s
kubectl config use-context "kind-$CLUSTER" >/dev/null
kind load docker-image "$IMAGE" --name "$CLUSTER"

echo "--- PostgreSQL, Redis, Kafka"
kubectl create namespace "$NAMESPACE" --dry-run=client -o yaml | kubectl apply -f -
kubectl -n "$NAMESPACE" apply -f deploy/kind/backing-services.yaml
kubectl -n "$NAMESPACE" rollout status deploy/postgres deploy/redis deploy/kafka --timeout=300s

echo "--- chart"
helm lint deploy/helm/model-gateway -f deploy/kind/values.yaml --strict
helm upgrade --install "$RELEASE" deploy/helm/model-gateway -n "$NAMESPACE" -f deploy/kind/values.yaml --wait --timeout 10m \
  || { kubectl -n "$NAMESPACE" get pods; kubectl -n "$NAMESPACE" logs -l "app.kubernetes.io/instance=$RELEASE" --tail=50 --prefix; exit 1; }
helm test "$RELEASE" -n "$NAMESPACE" --logs

echo "--- API through the edge"
kubectl -n "$NAMESPACE" port-forward "svc/$RELEASE-model-gateway-edge" "$PORT:8080" >/dev/null &
FORWARD_PID=$!
for _ in $(seq 1 30); do curl -fs "http://127.0.0.1:$PORT/v1/models" >/dev/null && break; sleep 1; done
ADMIN_TOKEN=$(kubectl -n "$NAMESPACE" get secret "$RELEASE-model-gateway" -o jsonpath='{.data.admin-token}' | base64 -d)
GATEWAY_URL="http://127.0.0.1:$PORT" GATEWAY_ADMIN_TOKEN="$ADMIN_TOKEN" node deploy/kind/cluster-checks.mjs
