/** Every page the gateway serves outside /api/v1. */
import type { Page } from './page.ts';

export const PAGES: Page[] = [];
