# The image k8s/ deploys: one image, the role picked by PARLEY_ROLE.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY main.ts tsconfig.json ./
COPY lib ./lib
COPY gateway ./gateway
COPY actors ./actors
COPY storage ./storage
# The operator's command line: `kubectl exec deploy/parley-gateway -- npx parley --help`.
COPY cli ./cli
COPY bin ./bin
COPY scripts/build.ts ./scripts/
RUN node --import tsx scripts/build.ts
# PARLEY_PRODUCTION: no demo organization (its keys would be printed into the logs).
ENV NODE_ENV=production PARLEY_PRODUCTION=true PARLEY_HOST=0.0.0.0 PARLEY_MODE=cluster
USER node
EXPOSE 9991
# GET /metrics for Prometheus (PARLEY_METRICS_PORT): scrape it, never route it through the load balancer.
EXPOSE 9464
# Exec form, so SIGTERM reaches Parley (graceful shard handover).
CMD ["node", "--enable-source-maps", "dist/main.mjs"]
