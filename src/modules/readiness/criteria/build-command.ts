import { fileIn, packageJson, perApp, sectionIn, taskTarget } from './evidence.ts';
import type { Criterion } from './types.ts';

/** One documented command builds each application. */
export const buildCommand: Criterion = {
  id: 'build_command',
  level: 1,
  title: 'Build command',
  evaluate: (ctx) =>
    perApp(ctx, async (app) => {
      const task = await taskTarget(ctx, app.path, 'build');
      switch (app.ecosystem) {
        case 'node': {
          const script = (await packageJson(ctx, app.path))?.scripts?.build;
          if (script) return { ok: true, evidence: `\`build\` script in ${app.manifest}: ${script}` };
          break;
        }
        case 'python': {
          const system = await sectionIn(ctx, app.path, ['pyproject.toml'], ['build-system']);
          if (system) return { ok: true, evidence: `${system} (python -m build)` };
          const setup = fileIn(ctx, app.path, ['setup.py']);
          if (setup) return { ok: true, evidence: `${setup} builds the package` };
          break;
        }
        case 'go':
          return { ok: true, evidence: `${app.manifest}: \`go build ./...\` builds the module` };
        case 'rust':
          return { ok: true, evidence: `${app.manifest}: \`cargo build\` builds the crate` };
        case 'java':
          return { ok: true, evidence: `${app.manifest} defines the build (${app.manifest!.endsWith('pom.xml') ? 'mvn package' : 'gradle build'})` };
        default:
          break;
      }
      if (task) return { ok: true, evidence: task };
      const docker = fileIn(ctx, app.path, ['Dockerfile']);
      if (docker) return { ok: true, evidence: `${docker} builds the application image` };
      return {
        ok: false,
        evidence: `no build command (no build script, Makefile/justfile/Taskfile \`build\` target or Dockerfile for ${app.manifest ?? app.path})`,
      };
    }),
};
