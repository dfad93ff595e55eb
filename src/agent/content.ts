import { z } from 'zod';

/**
 * Message content as the wire reference (section 1.7) shapes it: seven block kinds, camelCase
 * (`toolUseId`, `isError`, `mediaType`, `signatureProvider`). The runtime speaks these blocks to
 * every model adapter, and the sessions API stores and returns them unchanged.
 */

const ImageMediaTypeSchema = z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/** ModelProvider of the wire reference (section 1.3, `providerLock`). */
const ModelProviderSchema = z.enum(['anthropic', 'openai', 'generic-chat-completion-api', 'factory', 'google', 'xai', 'voyage', 'bedrock-converse']);

const ImageSourceSchema = z.object({ type: z.literal('base64'), data: z.string(), mediaType: ImageMediaTypeSchema });

const DocumentSourceSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('base64'),
    mediaType: z.literal('application/pdf'),
    data: z.string(),
    parsedData: z.string().optional(),
    name: z.string().optional(),
    path: z.string().optional(),
  }),
  z.object({
    type: z.literal('text'),
    mediaType: z.literal('text/plain'),
    data: z.string(),
    name: z.string().optional(),
    mime: z.string().optional(),
  }),
]);

const TextBlockSchema = z.object({ type: z.literal('text'), id: z.string().optional(), text: z.string() });
const ImageBlockSchema = z.object({ type: z.literal('image'), id: z.string().optional(), source: ImageSourceSchema });
const ThinkingBlockSchema = z.object({
  type: z.literal('thinking'),
  id: z.string().optional(),
  thinking: z.string(),
  /** Opaque proof the provider checks when the block is sent back; "" when the provider gave none. */
  signature: z.string(),
  signatureProvider: z.union([ModelProviderSchema, z.literal('unknown')]).optional(),
  durationMs: z.number().nonnegative().optional(),
});
const RedactedThinkingBlockSchema = z.object({ type: z.literal('redacted_thinking'), id: z.string().optional(), data: z.string() });
const ToolUseBlockSchema = z.object({
  type: z.literal('tool_use'),
  /** The tool use id; `tool_result.toolUseId` points at it. */
  id: z.string(),
  name: z.string(),
  input: z.record(z.string(), z.unknown()),
  thoughtSignature: z.string().optional(),
});
const DocumentBlockSchema = z.object({ type: z.literal('document'), id: z.string().optional(), source: DocumentSourceSchema });
const ToolResultBlockSchema = z.object({
  type: z.literal('tool_result'),
  id: z.string().optional(),
  toolUseId: z.string(),
  content: z.union([z.string(), z.array(z.discriminatedUnion('type', [TextBlockSchema, ImageBlockSchema, DocumentBlockSchema]))]).optional(),
  isError: z.boolean().optional(),
});

export const ContentBlockSchema = z.discriminatedUnion('type', [
  TextBlockSchema,
  ImageBlockSchema,
  ThinkingBlockSchema,
  RedactedThinkingBlockSchema,
  ToolUseBlockSchema,
  ToolResultBlockSchema,
  DocumentBlockSchema,
]);

export type ToolUseBlock = z.infer<typeof ToolUseBlockSchema>;
export type ToolResultBlock = z.infer<typeof ToolResultBlockSchema>;
export type ContentBlock = z.infer<typeof ContentBlockSchema>;

const MessageRoleSchema = z.enum(['user', 'assistant', 'tool', 'system']);

/**
 * What the runtime reads and emits: a role and its content. The stored message adds `id`,
 * `createdAt`, `updatedAt` and the other fields of section 1.7. Tool results travel in `tool`
 * messages, one per batch of tool calls. `covers` names the stored messages (by `seq`) this one
 * stands for: itself once stored, or for a compaction summary the range it replaces, so a later
 * compaction can say which stored messages it replaces. Model adapters ignore it.
 */
const RuntimeMessageSchema = z.object({
  role: MessageRoleSchema,
  content: z.array(ContentBlockSchema),
  covers: z.object({ fromSeq: z.number(), toSeq: z.number() }).optional(),
});
export type RuntimeMessage = z.infer<typeof RuntimeMessageSchema>;

/** The text of a tool result, whichever form its content has. */
export function toolResultText(block: ToolResultBlock): string {
  if (block.content === undefined) return '';
  if (typeof block.content === 'string') return block.content;
  return block.content.map((b) => (b.type === 'text' ? b.text : b.type === 'document' && b.source.type === 'text' ? b.source.data : '')).join('\n');
}
