import { globTool, listDirectoryTool, readFileTool, resolvePath, searchTextTool, type AgentTool } from '../../../agent/tools.ts';

/**
 * The tools the model reads a checkout with, on a local host confined to it. read_file and
 * list_directory go through the host's file calls, which refuse paths outside; glob and
 * search_text put their directory into a command line, so it is checked here first (by the
 * host's stat, which refuses it the same way), and a glob pattern may not climb out either.
 */
export function readOnlyTools(): AgentTool[] {
  return [readFileTool, listDirectoryTool, globTool, searchTextTool].map((tool) => ({
    ...tool,
    async run(host, input, signal) {
      if (tool !== globTool && tool !== searchTextTool) return tool.run(host, input, signal);
      const pattern = (input as { pattern?: unknown } | null)?.pattern;
      if (tool === globTool && typeof pattern === 'string' && (pattern.startsWith('/') || pattern.split('/').includes('..'))) {
        return { isError: true, output: 'glob patterns are relative to the repository and may not climb out of it with ..' };
      }
      const p = (input as { path?: unknown } | null)?.path;
      if (typeof p === 'string') {
        try {
          await host.stat(resolvePath(host.cwd, p), { signal });
        } catch (err) {
          return { isError: true, output: (err as Error).message };
        }
      }
      return tool.run(host, input, signal);
    },
  }));
}
