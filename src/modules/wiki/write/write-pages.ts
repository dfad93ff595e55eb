import type { PageNode } from '../page.ts';
import type { PageDraft, WriteInput } from './context.ts';
import { writeModulePage } from './module-page.ts';
import { writeArchitecture, writeGettingStarted, writeGlossary, writeOverview } from './overview-pages.ts';
import { writeConfiguration, writeDataModels, writeDependencies, writeLensSection, writeNumbers, writeReferenceSection } from './section-pages.ts';

const WRITERS: Record<string, (input: WriteInput, page: PageNode) => PageDraft> = {
  overview: writeOverview,
  'overview.architecture': writeArchitecture,
  'overview.getting-started': writeGettingStarted,
  'overview.glossary': writeGlossary,
  'by-the-numbers': writeNumbers,
  reference: writeReferenceSection,
  'reference.configuration': writeConfiguration,
  'reference.data-models': writeDataModels,
  'reference.dependencies': writeDependencies,
};

/** The survey version of a page: complete without a model. */
export function writeSurveyPage(input: WriteInput, page: PageNode): PageDraft {
  if (page.id === input.plan.lens.id) return writeLensSection(input, page);
  const modulePage = input.plan.modulePages.find((p) => p.id === page.id);
  if (modulePage) return writeModulePage(input, modulePage);
  const writer = WRITERS[page.id];
  if (!writer) throw new Error(`no writer for page ${page.id}`);
  return writer(input, page);
}
