import path from 'node:path/posix';

/** Languages the survey parses with a grammar; the others are counted, not parsed. */
export type ParsedLanguage = 'typescript' | 'tsx' | 'javascript' | 'python' | 'go' | 'rust' | 'java';

interface LanguageInfo {
  name: string;
  grammar?: ParsedLanguage;
}

const BY_EXTENSION: Record<string, LanguageInfo> = {
  '.ts': { name: 'TypeScript', grammar: 'typescript' },
  '.mts': { name: 'TypeScript', grammar: 'typescript' },
  '.cts': { name: 'TypeScript', grammar: 'typescript' },
  '.tsx': { name: 'TypeScript', grammar: 'tsx' },
  '.js': { name: 'JavaScript', grammar: 'javascript' },
  '.mjs': { name: 'JavaScript', grammar: 'javascript' },
  '.cjs': { name: 'JavaScript', grammar: 'javascript' },
  '.jsx': { name: 'JavaScript', grammar: 'javascript' },
  '.py': { name: 'Python', grammar: 'python' },
  '.go': { name: 'Go', grammar: 'go' },
  '.rs': { name: 'Rust', grammar: 'rust' },
  '.java': { name: 'Java', grammar: 'java' },
  '.kt': { name: 'Kotlin' },
  '.scala': { name: 'Scala' },
  '.rb': { name: 'Ruby' },
  '.php': { name: 'PHP' },
  '.c': { name: 'C' },
  '.h': { name: 'C' },
  '.cc': { name: 'C++' },
  '.cpp': { name: 'C++' },
  '.hpp': { name: 'C++' },
  '.cs': { name: 'C#' },
  '.swift': { name: 'Swift' },
  '.sh': { name: 'Shell' },
  '.bash': { name: 'Shell' },
  '.sql': { name: 'SQL' },
  '.prisma': { name: 'Prisma' },
  '.proto': { name: 'Protocol Buffers' },
  '.css': { name: 'CSS' },
  '.scss': { name: 'CSS' },
  '.html': { name: 'HTML' },
  '.vue': { name: 'Vue' },
  '.svelte': { name: 'Svelte' },
};

/** Directories whose files are vendored or generated: counted nowhere, documented nowhere. */
const IGNORED_DIRS = new Set(['node_modules', 'vendor', 'dist', 'build', 'target', '.git', '__pycache__', '.venv', 'venv', 'generated', 'third_party']);

export function languageOf(file: string): LanguageInfo | undefined {
  return BY_EXTENSION[path.extname(file).toLowerCase()];
}

export function isIgnoredPath(file: string): boolean {
  return file.split('/').some((segment) => IGNORED_DIRS.has(segment)) || /\.min\.js$|\.d\.ts$/.test(file);
}

/** Source code worth documenting (not lockfiles, data or generated files). */
export function isSourceFile(file: string): boolean {
  return languageOf(file) !== undefined && !isIgnoredPath(file);
}

export function countLines(text: string): number {
  if (!text) return 0;
  let lines = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) lines++;
  return text.endsWith('\n') ? lines : lines + 1;
}
