import type { RouteSpec } from '../../http/route.ts';
import type { OrganizationService } from './service.ts';

export function organizationRoutes(_service: OrganizationService): RouteSpec[] {
  return [];
}
