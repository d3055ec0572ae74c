/** GET /openapi.json: the OpenAPI 3.1 description of this API (`gateway/openapi/document.ts`). No credentials. */
import { buildDocument } from '../openapi/document.ts';
import { BinaryReply, route } from '../route.ts';

/** The document's bytes by feature level (built once: the routes do not change while the server runs). */
const built = new Map<number, Buffer>();

export const openapiDocument = route({
  method: 'GET',
  path: '/openapi.json',
  auth: 'none',
  params: {},
  async handle(ctx) {
    let bytes = built.get(ctx.featureLevel);
    if (!bytes) {
      // Imported here: the route list includes this route.
      const { ROUTES } = await import('./index.ts');
      bytes = Buffer.from(JSON.stringify(buildDocument(ROUTES, ctx.featureLevel)));
      built.set(ctx.featureLevel, bytes);
    }
    return new BinaryReply('application/json', bytes);
  },
});
