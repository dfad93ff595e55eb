import { z } from 'zod';

export const ProvidersResponseSchema = z
  .strictObject({
    providers: z.array(z.string()).meta({ description: 'Managed compute providers usable by this organization now' }),
  })
  .meta({ id: 'ComputerProviders' });
