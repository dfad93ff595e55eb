import type { RouteSpec } from '../../http/route.ts';
import type { ServiceAccountsService } from './service.ts';

export function serviceAccountRoutes(_service: ServiceAccountsService): RouteSpec[] {
  return [];
}
