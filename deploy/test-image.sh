#!/usr/bin/env bash
# The release check of the container deployment, run for real on a machine without an image
# registry: builds a Debian base image from Debian's packages (debootstrap, imported into podman),
# a Rust build image on it (the host's own toolchain copied in: nothing is fetched from outside the
# package registries), the gateway image's
# production and demo targets (deploy/Dockerfile with those bases as build arguments), then runs:
#   1. the gateway and an example agent as containers on a user-defined network: /readyz, a task
#      sent through with curl, the demo target's card;
#   2. deploy/compose.yaml with podman-compose: a task through the composed gateway;
#   3. deploy/compose-replicas.yaml (two replicas, nginx, a real Redis container; nginx and Redis
#      images built from Debian's packages too): both replicas ready, a task created through the
#      balancer read back through the balancer on the other replica.
# Everything it starts is stopped and removed at the end (images are kept, so a second run reuses
# them; A2A_TEST_IMAGE_REBUILD=1 builds the gateway images again).
#
#   sudo bash deploy/test-image.sh        # root: rootful podman (apt-get installs what is missing)
#
# Building the gateway is a full release build inside the container, twice (production, demo):
# 10+ minutes each on two cores; it runs under nice -n 19.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=${A2A_TEST_IMAGE_WORK:-/var/tmp/a2a-test-image}
suite=${A2A_TEST_IMAGE_SUITE:-bookworm}
mirror=${A2A_TEST_IMAGE_MIRROR:-http://deb.debian.org/debian}
rust_version=$(rustc --version | cut -d' ' -f2)
debian=localhost/a2a-test/debian:$suite
rust=localhost/a2a-test/rust:$rust_version-$suite
redis=localhost/a2a-test/redis:$suite
nginx=localhost/a2a-test/nginx:$suite
production=localhost/a2a-gateway:latest
demo=localhost/a2a-gateway:demo
net=a2a-test-net
key=
# Host ports of the single-container run (the compose files publish 8080, 9090, 9091 and 9092).
port=${A2A_TEST_IMAGE_PORT:-18080}
admin_port=$((port + 1))
demo_port=$((port + 2))

log() { printf '\ntest-image: %s\n' "$*" >&2; }
fail() {
    printf 'test-image: FAILED: %s\n' "$*" >&2
    exit 1
}

tools() {
    local missing=()
    for tool in podman buildah debootstrap podman-compose runc curl python3; do
        command -v "$tool" >/dev/null || missing+=("$tool")
    done
    if ((${#missing[@]})); then
        log "installing from Debian: ${missing[*]}"
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install -y podman buildah debootstrap podman-compose runc curl
    fi
}

# Sandboxes like this one (cgroup v1 and v2 mounted at once, a capped RLIMIT_NPROC) refuse what
# podman's defaults ask for: crun says "cgroups in hybrid mode not supported", and setting the
# container's rlimits to podman's defaults is "Operation not permitted". runc with cgroupfs and
# rlimits within the caller's own work everywhere, so this run uses them.
engine_config() {
    mkdir -p "$work"
    cat >"$work/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOF
    export CONTAINERS_CONF=$work/containers.conf
}

# The Debian base: debootstrap (minbase) into a rootfs, imported as a local image.
base_image() {
    if podman image exists "$debian"; then
        log "base image $debian exists"
        return
    fi
    log "debootstrap $suite from $mirror"
    rm -rf "$work/rootfs"
    debootstrap --variant=minbase "$suite" "$work/rootfs" "$mirror"
    rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
    tar -C "$work/rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$debian"
    rm -rf "$work/rootfs"
}

# An image FROM the Debian base, from a Containerfile on stdin; `$2`, when given, is copied into the
# build context as `rust/` (the host's Rust toolchain).
derived_image() {
    local tag=$1 toolchain=${2:-}
    if podman image exists "$tag"; then
        log "image $tag exists"
        return
    fi
    log "building $tag"
    rm -rf "$work/context"
    mkdir -p "$work/context/ca" "$work/context/rust"
    # The host's own added CAs (e.g. a TLS-inspecting egress proxy's): the build then reaches
    # Debian's packages and crates.io the way the host does.
    cp /usr/local/share/ca-certificates/*.crt "$work/context/ca/" 2>/dev/null || true
    if [[ -n $toolchain ]]; then
        cp -a "$toolchain/bin" "$toolchain/lib" "$work/context/rust/"
    fi
    cat >"$work/Containerfile"
    nice -n 19 podman build --build-arg BASE="$debian" -t "$tag" -f "$work/Containerfile" "$work/context"
}

images() {
    # The build image carries the host's own Rust toolchain (the one this project is tested with):
    # nothing is downloaded from outside the package registries.
    local sysroot
    sysroot=$(rustc --print sysroot)
    derived_image "$rust" "$sysroot" <<EOF
ARG BASE
FROM \${BASE}
ENV PATH=/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    CARGO_HOME=/usr/local/cargo
COPY ca/ /usr/local/share/ca-certificates/
COPY rust/ /usr/local/rust/
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates gcc libc6-dev make \\
    && rm -rf /var/lib/apt/lists/* && update-ca-certificates && rustc --version && cargo --version
EOF
    derived_image "$redis" <<'EOF'
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends redis-server && rm -rf /var/lib/apt/lists/*
CMD ["redis-server", "--protected-mode", "no"]
EOF
    derived_image "$nginx" <<'EOF'
ARG BASE
FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends nginx && rm -rf /var/lib/apt/lists/* \
    && rm -f /etc/nginx/sites-enabled/default
CMD ["nginx", "-g", "daemon off;"]
EOF
    local target tag
    for target in production demo; do
        tag=$production
        [ "$target" = demo ] && tag=$demo
        if podman image exists "$tag" && [ -z "${A2A_TEST_IMAGE_REBUILD:-}" ]; then
            log "image $tag exists"
            continue
        fi
        log "building the gateway image, target $target (a release build: minutes)"
        nice -n 19 podman build -f "$root/deploy/Dockerfile" --target "$target" \
            --build-arg BUILD_IMAGE="$rust" --build-arg RUNTIME_IMAGE="$debian" -t "$tag" "$root"
    done
}

# Everything this run starts, stopped and removed (also on failure).
started_containers=()
started_compose=()
cleanup() {
    local file
    for file in "${started_compose[@]}"; do
        podman-compose -f "$file" down >/dev/null 2>&1 || true
    done
    if ((${#started_containers[@]})); then
        podman rm -f "${started_containers[@]}" >/dev/null 2>&1 || true
    fi
    podman network rm -f "$net" >/dev/null 2>&1 || true
    # podman-compose 1.0 leaves the project's network behind.
    if ((${#started_compose[@]})) || [ -n "${compose_ran:-}" ]; then
        podman network rm -f deploy_default >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT

# Waits until `url` answers 200 (up to 60 s).
wait_ok() {
    local url=$1
    for _ in $(seq 1 120); do
        if curl -fsS -o /dev/null "$url" 2>/dev/null; then
            return 0
        fi
        sleep 0.5
    done
    fail "$url did not answer 200 within 60 s"
}

# Sends a message for the echo skill to the gateway at $1 with the test key; prints the answer.
send_task() {
    local answer
    answer=$(curl -fsS "$1/" -H "Authorization: Bearer $key" -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' \
        -d '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hello from test-image"}],"metadata":{"skillId":"echo"}}}}')
    echo "$answer" | grep -q '"TASK_STATE_COMPLETED"' || fail "the task did not complete: $answer"
    echo "$answer" | grep -q 'hello from test-image' || fail "no echo in the answer: $answer"
    echo "$answer"
}

# A new API key (id main) from the image's own `hash-key`: the key in $key, its hash exported for
# the configurations (they read A2A_API_KEY_HASH).
new_key() {
    local out
    out=$(podman run --rm "$production" hash-key --id main)
    key=$(echo "$out" | sed -n 's/^key .*: //p')
    A2A_API_KEY_HASH=$(echo "$out" | sed -n 's/^ *hash: "\(.*\)"$/\1/p')
    export A2A_API_KEY_HASH
    [ -n "$key" ] && [ -n "$A2A_API_KEY_HASH" ] || fail "hash-key printed no key and hash: $out"
}

run_containers() {
    log "1. the gateway and an example agent on the network $net"
    podman network rm -f "$net" >/dev/null 2>&1 || true
    podman network create "$net" >/dev/null
    started_containers+=(a2a-test-echo a2a-test-gateway a2a-test-demo)
    podman run -d --name a2a-test-echo --network "$net" "$demo" example-agent echo --listen 0.0.0.0:9001 >/dev/null
    new_key
    cat >"$work/gateway.yaml" <<EOF
public_url: http://127.0.0.1:$port
listeners:
  public: 0.0.0.0:8080
  admin: 0.0.0.0:9090
auth:
  api_keys:
    keys:
      - {id: main, hash: "\${A2A_API_KEY_HASH}", caller: main}
backends:
  - {name: echo, url: "http://a2a-test-echo:9001"}
EOF
    podman run -d --name a2a-test-gateway --network "$net" -e A2A_API_KEY_HASH \
        -v "$work/gateway.yaml:/etc/a2a-gateway/gateway.yaml:ro" \
        -p "127.0.0.1:$port:8080" -p "127.0.0.1:$admin_port:9090" "$production" >/dev/null
    wait_ok "http://127.0.0.1:$admin_port/readyz"
    log "/readyz: $(curl -fsS "http://127.0.0.1:$admin_port/readyz")"
    log "task: $(send_task "http://127.0.0.1:$port")"
    podman run -d --name a2a-test-demo -p "127.0.0.1:$demo_port:8080" "$demo" >/dev/null
    wait_ok "http://127.0.0.1:$demo_port/.well-known/agent-card.json"
    local card
    for _ in $(seq 1 40); do
        card=$(curl -fsS "http://127.0.0.1:$demo_port/.well-known/agent-card.json")
        echo "$card" | grep -q '"slow"' && break
        sleep 0.5
    done
    for skill in echo review-pr clarify slow; do
        echo "$card" | grep -q "\"$skill\"" || fail "the demo image's card lacks $skill: $card"
    done
    log "the demo image serves the four example agents"
    podman rm -f a2a-test-demo a2a-test-gateway a2a-test-echo >/dev/null
    podman network rm -f "$net" >/dev/null
}

compose_up() {
    started_compose+=("$1")
    compose_ran=1
    A2A_GATEWAY_IMAGE=$production A2A_DEMO_IMAGE=$demo REDIS_IMAGE=$redis NGINX_IMAGE=$nginx \
        podman-compose -f "$1" up -d --no-build
}

run_compose() {
    log "2. deploy/compose.yaml"
    compose_up "$root/deploy/compose.yaml"
    wait_ok http://127.0.0.1:9090/readyz
    log "/readyz: $(curl -fsS http://127.0.0.1:9090/readyz)"
    log "task: $(send_task http://127.0.0.1:8080)"
    podman-compose -f "$root/deploy/compose.yaml" down
    started_compose=()

    log "3. deploy/compose-replicas.yaml: two replicas, nginx and Redis"
    compose_up "$root/deploy/compose-replicas.yaml"
    wait_ok http://127.0.0.1:9091/readyz
    wait_ok http://127.0.0.1:9092/readyz
    wait_ok http://127.0.0.1:8080/.well-known/agent-card.json
    local answer task
    answer=$(send_task http://127.0.0.1:8080)
    task=$(echo "$answer" | python3 -c 'import json, sys; print(json.load(sys.stdin)["result"]["task"]["id"])')
    [ -n "$task" ] || fail "no task id in $answer"
    # nginx takes turns: of two reads one lands on the replica that did not create the task, which
    # knows it only from Redis.
    for _ in 1 2; do
        answer=$(curl -fsS http://127.0.0.1:8080/ -H "Authorization: Bearer $key" -H 'A2A-Version: 1.0' \
            -H 'Content-Type: application/json' \
            -d "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"GetTask\",\"params\":{\"id\":\"$task\"}}")
        echo "$answer" | grep -q "\"id\":\"$task\"" || fail "task $task not found through the balancer: $answer"
    done
    log "task $task read back through both replicas; redis: $(podman exec "$(podman ps -q --filter name=redis)" redis-cli dbsize) keys"
    podman-compose -f "$root/deploy/compose-replicas.yaml" down
    started_compose=()
}

tools
engine_config
base_image
images
run_containers
run_compose
log "passed: images built from Debian's packages, containers and both compose files run"
