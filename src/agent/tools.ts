import type { ToolSpec } from './model-client.ts';
import type { AgentTool } from './tool-definition.ts';
import { editFileTool, readFileTool, writeFileTool } from './tool-files.ts';
import { globTool, listDirectoryTool, searchTextTool } from './tool-listing.ts';
import { runCommandTool } from './tool-shell.ts';

export { defineTool, resolvePath, MAX_TOOL_OUTPUT_CHARS, type AgentTool, type OutputStream, type ToolEffects } from './tool-definition.ts';
export { editFileTool, readFileTool, writeFileTool } from './tool-files.ts';
export { globTool, listDirectoryTool, searchTextTool } from './tool-listing.ts';
export { runCommandTool } from './tool-shell.ts';

/** The agent's built-in tools, all running on the session's computer in its cwd. */
export const defaultTools: readonly AgentTool[] = [runCommandTool, readFileTool, writeFileTool, editFileTool, listDirectoryTool, globTool, searchTextTool];

export function toolSpecs(tools: readonly AgentTool[]): ToolSpec[] {
  return tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.jsonSchema }));
}
