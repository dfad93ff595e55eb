/**
 * The organization's event types: what `GET /api/v0/events` streams and webhooks subscribe to.
 * Adding one is one line here plus a `publish` where it happens.
 */
export const ORGANIZATION_EVENT_TYPES = {
  'session.idle': 'A session finished its turn and waits for a message',
  'session.failed': 'A turn ended with an error (model, computer, credits, or a stuck turn stopped by the control plane)',
  'session.interrupted': 'A turn stopped because it was interrupted',
  'session.approval_requested': "A turn paused: tool calls need more autonomy than the session has and wait for its owner's or a manager's decision",
  'computer.active': 'A computer became active (provisioned, or registered)',
  'computer.error': 'Provisioning failed or timed out',
  'computer.deleted': 'A computer was deleted',
  'apikey.revoked': 'An API key was revoked (by a caller, by rotation, or with its service account)',
  'webhook.disabled': 'The control plane disabled a webhook endpoint after sustained delivery failure',
  'config.applied': 'A configuration apply changed the organization (a revision was recorded)',
  'config.failed': "A config source's commit could not be applied; the last good revision stays in force",
  'config.drift': 'A config source found managed objects changed outside config',
} as const;

export type OrganizationEventType = keyof typeof ORGANIZATION_EVENT_TYPES;

export const organizationEventTypes = Object.keys(ORGANIZATION_EVENT_TYPES) as [OrganizationEventType, ...OrganizationEventType[]];

/** Events of one session's or computer's stream that are not organization events. */
type ResourceEventType =
  | 'session.status'
  | 'session.message.created'
  | 'session.message.updated'
  | 'session.usage'
  | 'session.interrupt_requested'
  | 'session.approval_resolved'
  | 'computer.status'
  | 'computer.step'
  | 'computer.power'
  | 'computer.teardown';

export type EventType = OrganizationEventType | ResourceEventType;

/** Transient events: sent to connected streams only, never stored, never resumed (docs/api-decisions.md). */
export type TransientEventType = 'session.delta' | 'session.tool_output';

/** Sent on a stream, never stored: the resume point is older than the retention window. */
export const EVENTS_DROPPED = 'stream.events_dropped';
