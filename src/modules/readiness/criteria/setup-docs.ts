import path from 'node:path/posix';
import { fileIn } from './evidence.ts';
import type { Criterion } from './types.ts';

const SETUP_HEADING =
  /^#{1,4}\s*(.*\b(install(ation|ing)?|set ?up|getting started|quick ?start|development|developing|build(ing)?|running|run locally|usage|contributing)\b.*)$/im;
const GUIDE = /^(contributing|development|developing|hacking|setup|getting[-_]started|install(ation)?)(\.(md|markdown|rst|txt|adoc))?$/i;

/** The README section under `heading`, up to the next heading of the same or a higher level. */
function section(markdown: string, heading: RegExpExecArray): string {
  const start = heading.index + heading[0].length;
  const depth = /^#+/.exec(heading[0])![0].length;
  const rest = markdown.slice(start);
  const next = new RegExp(`^#{1,${depth}}\\s`, 'm').exec(rest);
  return next ? rest.slice(0, next.index) : rest;
}

/** Written steps to set up, build and run the project: a README section with commands, and a guide. */
export const setupDocs: Criterion = {
  id: 'setup_docs',
  level: 2,
  title: 'Setup documentation',
  async evaluate(ctx) {
    const found: string[] = [];
    const missing: string[] = [];
    const readme = fileIn(ctx, '.', [/^readme(\.(md|markdown|rst|txt|adoc))?$/i]);
    const text = readme ? ((await ctx.read(readme)) ?? '') : '';
    const heading = SETUP_HEADING.exec(text);
    if (heading && /```|^( {4}|\t)\S|^\s*\$ /m.test(section(text, heading))) {
      found.push(`${readme} section "${heading[1]!.trim()}" with commands`);
    } else {
      missing.push(readme ? `${readme} has no setup section with commands` : 'no README with a setup section');
    }
    const guide = ctx.files.find((f) => (path.dirname(f) === '.' || /^(docs?|\.github)$/i.test(path.dirname(f))) && GUIDE.test(path.basename(f)));
    if (guide) found.push(`setup guide ${guide}`);
    else missing.push('no CONTRIBUTING, DEVELOPMENT or setup guide at the root, in docs/ or .github/');
    return { numerator: found.length, denominator: 2, rationale: [...found, ...missing].join('; ') };
  },
};
