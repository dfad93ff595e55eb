import type { DraftPage } from './assemble.ts';
import { exportFiles } from './assemble.ts';
import { markdownLinks, type CitedSource } from './page.ts';

export interface BasePage {
  id: string;
  markdown: string;
  sources: CitedSource[];
  degraded: string | null;
}

/**
 * Whether a page of the previous run can stand for `draft`: it is a page the new plan also has,
 * it cites at least one file and every file it cites has the same blob SHA now, it was not a
 * degraded stand-in, and its links all reach pages of the new run. Pages that summarise the
 * whole repository cite what they quote but are drawn from every file, so callers pass only the
 * pages that describe part of it.
 */
function reusable(base: BasePage | undefined, blobs: Map<string, string>, linkTargets: Set<string>, file: string): boolean {
  if (!base || base.degraded || !base.sources.length) return false;
  if (!base.sources.every((s) => blobs.get(s.path) === s.blobSha)) return false;
  return markdownLinks(base.markdown, file).every((t) => linkTargets.has(t));
}

/** Replaces drafts by their previous versions where `reusable` allows; answers how many were reused. */
export function reusePages(drafts: DraftPage[], candidates: Set<string>, base: Map<string, BasePage>, blobs: Map<string, string>): number {
  const files = exportFiles(drafts);
  const targets = new Set(files.values());
  let reused = 0;
  for (const draft of drafts) {
    if (!candidates.has(draft.id)) continue;
    const previous = base.get(draft.id);
    if (!reusable(previous, blobs, targets, files.get(draft.id)!)) continue;
    draft.markdown = previous!.markdown;
    draft.sources = previous!.sources;
    draft.reused = true;
    reused++;
  }
  return reused;
}
