import { exportFileOf, relativeLink, type CitedSource, type PageNode } from '../page.ts';
import type { WikiPlan } from '../plan.ts';
import type { Survey } from '../survey/survey.ts';

interface RepoFacts {
  name: string;
  url: string;
  branch: string | null;
}

/** What every page writer reads: the survey, the plan, and the repository's name. */
export interface WriteInput {
  survey: Survey;
  plan: WikiPlan;
  repo: RepoFacts;
}

export interface PageDraft {
  markdown: string;
  sources: CitedSource[];
  symbols: string[];
}

/** Builds one page: links to other pages by id, and the sources it cites (with the blob it read). */
export function pageBuilder(input: WriteInput, page: PageNode) {
  const { plan, survey } = input;
  const fileOf = (id: string) => exportFileOf(plan.byId.get(id)!, plan.hasChildren(id));
  const own = fileOf(page.id);
  const cited = new Map<string, CitedSource>();
  return {
    /** A relative Markdown link to page `id`, titled with its title unless `text` is given. */
    link(id: string, text?: string): string {
      const target = plan.byId.get(id);
      if (!target) throw new Error(`page ${page.id} links to ${id}, which the plan does not have`);
      return `[${text ?? target.title}](${relativeLink(own, fileOf(id))})`;
    },
    /** A link to the page of the module `dir`, or to the lens section when it has none. */
    moduleLink(dir: string): string {
      const id = plan.moduleIdOf(dir);
      return id ? this.link(id, dir || '(root)') : `${dir || '(root)'} (${this.link(plan.lens.id, 'no page of its own')})`;
    },
    /** Cites `path` (lines optional) and answers it as inline code. */
    cite(path: string, lines?: [number, number]): string {
      const blobSha = survey.blobs.get(path);
      if (blobSha) {
        const entry = cited.get(path) ?? { path, blobSha, lines: [] };
        if (lines && !entry.lines.some(([a, b]) => a === lines[0] && b === lines[1])) entry.lines.push(lines);
        cited.set(path, entry);
      }
      return `\`${path}\`${lines ? `:${lines[0]}` : ''}`;
    },
    finish(markdown: string, symbols: string[] = []): PageDraft {
      return {
        markdown: markdown.replace(/\n{3,}/g, '\n\n').trim() + '\n',
        sources: [...cited.values()].sort((a, b) => a.path.localeCompare(b.path)),
        symbols,
      };
    },
  };
}
