# syntax=docker/dockerfile:1.7
# The agentplane control plane: `docker build -t agentplane:dev .`
# Stages: pulumi (Go: the Pulumi CLI and the plugins managed providers need), build (npm, Prisma
# client), runtime (Node 24, non-root, no compilers).

ARG NODE_IMAGE=node:24-bookworm-slim
ARG GO_IMAGE=golang:1.26-bookworm

FROM ${GO_IMAGE} AS pulumi
ENV AGENTPLANE_PULUMI_HOME=/opt/pulumi
WORKDIR /src
COPY package.json ./
COPY scripts/pulumi-toolchain.sh scripts/pulumi-deploy-tools.sh scripts/pulumi-kubernetes-embed.go scripts/
COPY scripts/pulumi-resource-command scripts/pulumi-resource-command
# The same scripts developers run, from the Go module proxy only: the CLI at the @pulumi/pulumi
# version, Pulumi YAML's language host, pulumi-resource-command, and upstream's kubernetes plugin at
# the @pulumi/kubernetes version.
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    bash scripts/pulumi-deploy-tools.sh \
 && rm -rf /opt/pulumi/*/home/*.lock /opt/pulumi/*/home/plugins/*.lock

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/prisma-generate.mjs scripts/
COPY prisma prisma
COPY prisma.config.ts ./
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
COPY bin bin
COPY src src
# The web console's sources and the typed client they import, served as they are (no build step).
COPY console console
COPY clients/typescript/src clients/typescript/src
# The generated Prisma client lives in src/generated, so it survives the prune of dev dependencies.
RUN npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini ca-certificates git openssh-client \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 agentplane \
 && useradd --uid 10001 --gid 10001 --home-dir /home/agentplane --create-home --shell /usr/sbin/nologin agentplane \
 && install -d -o 10001 -g 10001 /var/lib/agentplane
# PULUMI_HOME must be writable: the CLI takes plugin locks there.
COPY --from=pulumi --chown=10001:10001 /opt/pulumi /opt/pulumi
WORKDIR /app
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/src src
COPY --from=build /app/prisma prisma
COPY --from=build /app/package.json /app/prisma.config.ts ./
COPY --from=build /app/bin bin
COPY --from=build /app/console console
COPY --from=build /app/clients clients
ENV NODE_ENV=production \
    PORT=8080 \
    AGENTPLANE_DATA_DIR=/var/lib/agentplane \
    AGENTPLANE_PULUMI_HOME=/opt/pulumi \
    PULUMI_SKIP_UPDATE_CHECK=true \
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
USER 10001:10001
EXPOSE 8080
VOLUME ["/var/lib/agentplane"]
# Docker's own check (Kubernetes ignores it and uses the Deployment's probes on /healthz and /readyz).
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# tini as PID 1 forwards SIGTERM (graceful stop) and reaps the Pulumi CLI's and ssh's children.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "bin/agentplane.js", "serve"]
