/**
 * The `id` a user has on the wire (the users list, enterprise-controls history): the
 * identity-provider user id, as the spec says, once the user has one (their first sign-in with a
 * token links it); agentplane's own id until then, for pending invitations and key-only users.
 */
export function wireUserId(user: { id: string; idpUserId: string | null }): string {
  return user.idpUserId ?? user.id;
}
