import { describe, expect, it } from 'vitest';
import { expectOfficialResponse } from '../support/official-openapi.ts';

// The check the official-openapi e2e test relies on must be able to fail.
describe('the official-document check', () => {
  it('rejects bodies the documents do not allow', () => {
    expect(() => expectOfficialResponse('/api/v1/analytics/tokens', 200, { data: 'not a list' })).toThrow();
    expect(() => expectOfficialResponse('/api/v1/analytics/tokens', 400, { title: 1, detail: 'x', status: 400, requestId: 'r' })).toThrow();
    expect(() => expectOfficialResponse('/api/organization/maturity-level-reports', 200, { reports: [{ reportId: 5 }] })).toThrow();
    expect(() => expectOfficialResponse('/api/v1/analytics/tokens', 418, {})).toThrow(/lists no 418 answer/);
    expect(() => expectOfficialResponse('/api/v1/nowhere', 200, {})).toThrow(/not in the official documents/);
  });

  it('accepts an error body as documented', () => {
    expectOfficialResponse('/api/v1/analytics/users?x=1', 401, { title: 'Unauthorized', detail: 'no key', status: 401, requestId: 'req_1' });
  });
});
