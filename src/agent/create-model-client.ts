import { createAnthropicClient } from './anthropic-messages.ts';
import type { ModelClient, ModelConfig } from './model-client.ts';
import { createOpenAiChatClient } from './openai-chat.ts';

/**
 * The client for a model's provider. Apart from model-client.ts (the interface the providers
 * implement), so the providers import the interface without importing each other.
 */
export function createModelClient(model: ModelConfig): ModelClient {
  return model.provider === 'anthropic' ? createAnthropicClient(model) : createOpenAiChatClient(model);
}
