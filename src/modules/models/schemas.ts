import { z } from 'zod';

const ModelSchema = z
  .strictObject({
    id: z.string().meta({ description: 'What sessionSettings.model names: a models-file id, or custom:<name> for the organization’s custom models' }),
    provider: z.enum(['anthropic', 'openai-compatible']).meta({ description: 'The wire the control plane speaks to it' }),
    contextWindow: z.number().int().meta({ description: 'Tokens one call may read and write together' }),
    isDefault: z.boolean().meta({ description: 'The model a session that names none uses (exactly one when the list is not empty)' }),
  })
  .meta({ id: 'Model' });

export const ModelListResponse = z.strictObject({ models: z.array(ModelSchema) });
