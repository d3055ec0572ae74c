/** How `fetch_event_types` selects the parts of a register snapshot: null means every part. */
export const wants = (fetch: readonly string[] | null, type: string): boolean => fetch === null || fetch.includes(type);
