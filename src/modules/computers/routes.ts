import { defineRoute } from '../../http/route.ts';
import { ProvidersResponseSchema } from './schemas.ts';
import type { ComputersService } from './service.ts';

export function computerRoutes(service: ComputersService) {
  return [
    defineRoute({
      method: 'get',
      path: '/api/v0/computers/providers',
      operationId: 'listComputerProviders',
      summary: 'List the managed compute providers available to the organization',
      tags: ['Computers'],
      responses: { 200: { description: 'Available providers', schema: ProvidersResponseSchema } },
      errors: [401, 500],
      handler: async () => ({ status: 200, body: { providers: await service.listAvailableProviders() } }),
    }),
  ];
}
