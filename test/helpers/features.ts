/** The feature level the server must advertise: derived from the feature table and the routes it serves. */
import { ROUTES } from '../../gateway/routes/index.ts';
import { featureLevel } from '../../lib/features.ts';

export const ADVERTISED = featureLevel(new Set(ROUTES.map((r) => `${r.method} ${r.path}`)));
