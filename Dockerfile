# Horizon ID as a container image (docs/container.md). Build: `docker build -t horizon-id .`
# (or `podman build`). Three stages:
#
#   build    every dependency, `npm run build` (TypeScript to dist/)
#   deps     the production dependencies only, from the lockfile (no devOptional package)
#   runtime  dist/src, dist/adapters, views/, locales/, package.json and deps' node_modules,
#            run by a user without privileges; nothing else of the two stages above
#
# BASE is any image with Node.js 22 or later and npm under /usr/local, as the official node
# images have them (docs/container.md makes one without a registry). From Node.js 22 on, the
# service's SQLite driver is better-sqlite3 13 (the package better-sqlite3-napi), a Node-API
# build shipped prebuilt: nothing is compiled here, so no install script runs (--ignore-scripts)
# and the build needs no compiler. better-sqlite3 12, the driver for Node.js 20 only, stays
# uncompiled; the runtime stage checks that the driver this Node.js loads does load.
ARG BASE=node:22-bookworm-slim

FROM ${BASE} AS build
# A CA bundle for npm's TLS when the network goes through a CA of its own (a path mounted into
# the build, e.g. `podman build -v /etc/ssl/certs/ca-certificates.crt:/run/host-ca.crt:ro
# --build-arg NODE_EXTRA_CA_CERTS=/run/host-ca.crt`); empty by default. Only these two stages see it.
ARG NODE_EXTRA_CA_CERTS=
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: no `prepare` (it would compile before the sources are here), no native build.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src src
COPY adapters adapters
# Some modules import their words from locales/ (JSON modules).
COPY locales locales
# tsconfig.build.json compiles the benchmark too, and it imports the test helpers.
COPY bench bench
COPY test/helpers test/helpers
RUN npm run -s build

FROM ${BASE} AS deps
ARG NODE_EXTRA_CA_CERTS=
WORKDIR /app
COPY package.json package-lock.json ./
# typescript, a devDependency, is also an optional peer of i18next (for its types), so the lockfile
# marks it devOptional and `npm ci --omit=dev` installs it all the same; the service never loads
# it. Every package the lockfile marks devOptional goes, with the commands left pointing at them.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && node -e "const fs = require('node:fs'); for (const [path, p] of Object.entries(require('./package-lock.json').packages)) if (p.devOptional) fs.rmSync(path, { recursive: true, force: true })" \
 && find node_modules/.bin -xtype l -delete

FROM ${BASE} AS runtime
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules node_modules
COPY --from=build /app/dist/src dist/src
COPY --from=build /app/dist/adapters dist/adapters
COPY views views
COPY locales locales
# The official node images have the user `node` (uid 1000); a base without it gets one. The
# service's files stay root's: it may read them, not change them. /data is the volume below.
RUN node -e "import('/app/dist/src/db/knex.js').then((m) => m.requireSqliteDriver())" \
 && (id -u node >/dev/null 2>&1 || useradd --uid 1000 --user-group --create-home --shell /bin/bash node) \
 && mkdir -p /data \
 && chown node:node /data
# The embedded default keeps its database (and, without SMTP_URL, its mail) in /data.
ENV HOST=0.0.0.0 \
    PORT=3000 \
    DATABASE_URL=sqlite:/data/idp.sqlite3 \
    MAIL_DIR=/data/mail
VOLUME /data
USER node
EXPOSE 3000
# No curl in a slim image: Node.js asks /healthz (which answers whatever the Host header is).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT || 3000}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node itself is PID 1 (no npm, no shell between): SIGTERM reaches the service's graceful stop.
CMD ["node", "dist/src/index.js"]
