// Owns the GET surface besides the operations: /openapi.json, the /docs reference page and its assets, /metrics, /readyz.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { Logger } from '../log.js';
import type { MetricsScrape } from '../metrics/scrape.js';

export interface SiteDeps {
  readonly corsOrigin: string;
  readonly log: Logger;
  /**
   * Builds the OpenAPI document from the registered operations. Called at the first GET /openapi.json, whose text is
   * then kept: built at start, the document's objects and its ~290 KB of text sat in every idle server's heap.
   */
  readonly openApi: () => object;
  /** Why the server cannot serve now (undefined: ready). */
  readonly notReady: () => string | undefined;
}

const require = createRequire(import.meta.url);

/** The swagger-ui-dist files the page needs, read from the installed package on first request (no CDN). */
const ASSETS: Readonly<Record<string, { file: string; type: string }>> = {
  'swagger-ui.css': { file: 'swagger-ui.css', type: 'text/css; charset=utf-8' },
  'swagger-ui-bundle.js': { file: 'swagger-ui-bundle.js', type: 'text/javascript; charset=utf-8' },
  'favicon-32x32.png': { file: 'favicon-32x32.png', type: 'image/png' },
};

const assetCache = new Map<string, Buffer>();

function asset(name: string): Buffer {
  let body = assetCache.get(name);
  if (body === undefined) {
    const spec = ASSETS[name];
    if (spec === undefined) throw new Error(`no asset ${name}`);
    body = readFileSync(join(dirname(require.resolve('swagger-ui-dist/package.json')), spec.file));
    assetCache.set(name, body);
  }
  return body;
}

/** The reference page: Swagger UI from the local assets, reading /openapi.json; "Try it out" calls this server. */
const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Plait API reference</title>
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <link rel="stylesheet" href="/docs/swagger-ui.css">
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true, docExpansion: 'none', validatorUrl: null });
  </script>
</body>
</html>
`;

function write(res: HttpResponse, status: string, type: string, body: string | Buffer, corsOrigin: string, cache = 'no-store'): void {
  res.cork(() => {
    res
      .writeStatus(status)
      .writeHeader('content-type', type)
      .writeHeader('cache-control', cache)
      .writeHeader('access-control-allow-origin', corsOrigin)
      .end(body);
  });
}

/** Mounts /openapi.json, /docs and /readyz on `app`. */
export function mountSite(app: TemplatedApp, deps: SiteDeps): void {
  let openApiJson: string | undefined;
  app.get('/openapi.json', (res) => {
    openApiJson ??= JSON.stringify(deps.openApi());
    write(res, '200 OK', 'application/json; charset=utf-8', openApiJson, deps.corsOrigin);
  });
  app.get('/docs', (res) => write(res, '200 OK', 'text/html; charset=utf-8', DOCS_HTML, deps.corsOrigin));
  app.get('/docs/', (res) => write(res, '200 OK', 'text/html; charset=utf-8', DOCS_HTML, deps.corsOrigin));
  for (const [name, spec] of Object.entries(ASSETS)) {
    app.get(`/docs/${name}`, (res) => write(res, '200 OK', spec.type, asset(name), deps.corsOrigin, 'public, max-age=3600'));
  }
  app.get('/readyz', (res) => {
    const problem = deps.notReady();
    if (problem === undefined) write(res, '200 OK', 'application/json; charset=utf-8', '{"status":"ready"}', deps.corsOrigin);
    else write(res, '503 Service Unavailable', 'application/json; charset=utf-8', JSON.stringify({ status: 'not ready', reason: problem }), deps.corsOrigin);
  });
}

/** Mounts GET /metrics (Prometheus text format) on `app`: the main one, or the one listening on METRICS_PORT. */
export function mountMetrics(app: TemplatedApp, metrics: MetricsScrape, deps: Pick<SiteDeps, 'corsOrigin' | 'log'>): void {
  app.get('/metrics', (res) => {
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    metrics.scrape().then(
      ({ contentType, text }) => {
        if (!aborted) write(res, '200 OK', contentType, text, deps.corsOrigin);
      },
      (error: unknown) => {
        deps.log.error('metrics scrape failed', { error });
        if (!aborted) write(res, '500 Internal Server Error', 'text/plain; charset=utf-8', 'metrics scrape failed\n', deps.corsOrigin);
      },
    );
  });
}
