import path from 'node:path/posix';
import { parse as parseYaml } from 'yaml';

/** A CI pipeline or build file and what it defines. */
export interface BuildConfig {
  file: string;
  kind: string;
  /** Jobs (CI), targets (make, just), stages or services (compose). */
  names: string[];
}

const CI_KINDS: [RegExp, string][] = [
  [/^\.github\/workflows\/[^/]+\.ya?ml$/, 'GitHub Actions'],
  [/^\.gitlab-ci\.ya?ml$/, 'GitLab CI'],
  [/^\.circleci\/config\.ya?ml$/, 'CircleCI'],
  [/^azure-pipelines\.ya?ml$/, 'Azure Pipelines'],
  [/^\.buildkite\/.*\.ya?ml$/, 'Buildkite'],
  [/(^|\/)Jenkinsfile$/, 'Jenkins'],
  [/^\.ci\/[^/]+$/, 'CI script'],
  [/(^|\/)Dockerfile([.-][^/]*)?$/, 'Dockerfile'],
  [/(^|\/)(docker-)?compose[^/]*\.ya?ml$/, 'Compose'],
  [/(^|\/)(GNU)?[Mm]akefile$/, 'Make'],
  [/(^|\/)[Jj]ustfile$/, 'just'],
  [/(^|\/)Taskfile\.ya?ml$/, 'Task'],
  [/^Pulumi\.ya?ml$/, 'Pulumi'],
  [/(^|\/)[^/]+\.tf$/, 'Terraform'],
];

export function buildKindOf(file: string): string | undefined {
  return CI_KINDS.find(([re]) => re.test(file))?.[1];
}

/** Names defined by a CI or build file; files that do not parse yield their kind alone. */
export function readBuildConfig(file: string, kind: string, text: string): BuildConfig {
  let names: string[] = [];
  try {
    if (/\.ya?ml$/.test(file)) {
      const doc = (parseYaml(text) ?? {}) as Record<string, unknown>;
      const source =
        kind === 'Compose' ? doc.services : kind === 'GitHub Actions' || kind === 'CircleCI' ? doc.jobs : kind === 'Pulumi' ? { [String(doc.name)]: 1 } : doc;
      names = Object.keys((source as Record<string, unknown>) ?? {}).filter(
        (k) => !k.startsWith('.') && !['stages', 'variables', 'default', 'include', 'workflows', 'version', 'on', 'name'].includes(k),
      );
    } else if (kind === 'Make' || kind === 'just') {
      names = [...text.matchAll(/^([A-Za-z0-9][\w.-]*)\s*:(?!=)/gm)].map((m) => m[1]!);
    } else if (kind === 'Dockerfile') {
      names = [...text.matchAll(/^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/gim)].map((m) => m[2] ?? m[1]!);
    }
  } catch {
    names = [];
  }
  return { file, kind, names: [...new Set(names)].slice(0, 30) };
}

export const isReadme = (file: string) => /^readme(\.(md|markdown|rst|txt))?$/i.test(path.basename(file));
