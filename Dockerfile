# syntax=docker/dockerfile:1
# Tollgate image: compile in one stage, install production dependencies in another, and ship only
# dist/src, dist/console, sql/, package.json, the `tollgate` command (packages/client: apply, export)
# and the production node_modules on a slim Node 24 runtime.

ARG NODE_IMAGE=node:24-bookworm-slim

# --- build: all dependencies (TypeScript), then tsc -------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json ./packages/client/
# --ignore-scripts: every install script in the tree belongs to a devDependency the build does not
# need (the `node` package would download a second Node binary; @swc/core is the test transform;
# esbuild finds its binary in its platform package without its postinstall).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# The web console (CONSOLE=on by default): esbuild bundles console/ into dist/console.
COPY console ./console
COPY scripts/build-console.mjs scripts/bundle-server.mjs ./scripts/
COPY scripts/lib ./scripts/lib
# The image's own Node runs tsc and esbuild; node_modules/.bin is not on PATH in a RUN step. The
# server starts from one bundle (scripts/bundle-server.mjs), which loads far faster than tsc's modules.
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json && node scripts/bundle-server.mjs \
  && node scripts/build-console.mjs
# The `tollgate` command, which the Kubernetes Job of k8s/base runs to apply a configuration file.
COPY packages/client/tsconfig.json packages/client/config-schema.json ./packages/client/
COPY packages/client/src ./packages/client/src
RUN node node_modules/typescript/bin/tsc -p packages/client/tsconfig.json

# --- deps: production dependencies only -----------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# The workspace's manifest, so its dependencies (the command's) are installed too.
COPY packages/client/package.json ./packages/client/
# The one production dependency with an install script, protobufjs, only warns there about its
# dependents' version ranges (package.json allowScripts keeps it off); --ignore-scripts also keeps a
# future one from running unreviewed.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# --- runtime ------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    PORT=8080 \
    OPS_PORT=9090 \
    DATA_DIR=/var/lib/tollgate
WORKDIR /app
# Code stays owned by root and read-only to the service user: a compromised process cannot rewrite it.
COPY --from=deps /app/node_modules ./node_modules
# package.json carries "type": "module", which Node needs to load dist/ as ESM.
COPY package.json ./
# The migration runner reads sql/ next to dist/ at start-up.
COPY sql ./sql
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/console ./dist/console
COPY packages/client/package.json packages/client/config-schema.json ./packages/client/
COPY --from=build /app/packages/client/dist ./packages/client/dist
# DATA_DIR holds the embedded database and a generated encryption key when no DATABASE_URL is set;
# it is the one path the service writes (mount a volume there to keep embedded data).
RUN mkdir -p /var/lib/tollgate && chown 1000:1000 /var/lib/tollgate && chmod 0700 /var/lib/tollgate
# Numeric uid/gid (the image's `node` user): Kubernetes runAsNonRoot can only verify a numeric USER.
USER 1000:1000
EXPOSE 8080 9090
# No curl in slim images: Node's fetch probes the ops listener.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.OPS_PORT || 9090) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
# Exec form: node is PID 1 and receives SIGTERM itself (no shell in between), so the drain runs.
# The V8 flags of `npm start` (package.json): a young generation of at most 16 MiB per semi-space
# (decision record 0021).
CMD ["node", "--max-semi-space-size=16", "dist/src/main.js"]
