/** Path templates with `{name}` segments, shared by the API routes and the pages. */
import type { RawParams } from './params.ts';

export const segmentsOf = (path: string): string[] => path.split('/').filter(Boolean);

/** The path parameters when `parts` fits the template `segments`, or null. */
export function matchSegments(segments: readonly string[], parts: readonly string[]): RawParams | null {
  if (segments.length !== parts.length) return null;
  const params: RawParams = new Map();
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg.startsWith('{') && seg.endsWith('}')) {
      try {
        params.set(seg.slice(1, -1), decodeURIComponent(parts[i]!));
      } catch {
        return null;
      }
    } else if (seg !== parts[i]) return null;
  }
  return params;
}
